/**
 * Codes are the ones the client got: a request an HTTP client sent that cannot be decoded is logged and counted
 * in grpc_server_handled_total with the code it was answered, as over gRPC. Streamed messages (INVALID_ARGUMENT,
 * RESOURCE_EXHAUSTED, never CANCELLED), REST bodies, gRPC-Web and Connect bodies; a Connect GET with an
 * undecodable `message` is 400 invalid_argument. node:http and fetch against a real server, in each gateway mode.
 */
import assert from "node:assert/strict";
import { request as httpRequest } from "node:http";
import http2, { connect } from "node:http2";
import { after, before, describe, test } from "node:test";
import { gzipSync } from "node:zlib";
import { create, toBinary } from "@bufbuild/protobuf";
import { Code as ConnectCode, ConnectError, createClient } from "@connectrpc/connect";
import { compressionGzip, createConnectTransport, createGrpcWebTransport } from "@connectrpc/connect-node";
import { Code, codeName } from "../../src/framework/index.js";
import { startTestServer, type TestServer } from "../../src/framework/testing/harness.js";
import { EchoRequestSchema, FixtureService } from "../gen/fixture/v1/fixture_pb.js";
import { fixtureService } from "./fixtures/fixture-service.js";
import { handled } from "./support/metrics.js";

const MAX_MESSAGE = 4096;

function post(url: string, type: string, pieces: string[]): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const req = httpRequest(url, { method: "POST", headers: { "content-type": type } }, (res) => {
      let body = "";
      res.setEncoding("utf8");
      res.on("data", (c: string) => (body += c));
      res.on("end", () => resolve({ status: res.statusCode ?? 0, body }));
    });
    req.on("error", reject);
    const write = (i: number) => (i === pieces.length ? req.end() : req.write(pieces[i]!, () => write(i + 1)));
    write(0);
  });
}

/** The call's response-time line, once written. */
async function callLine(server: TestServer, method: string, code: string): Promise<Record<string, unknown>> {
  for (;;) {
    const line = server.logs.find(
      (l) => l.msg === "response time" && l.grpcMethod === `/fixture.v1.FixtureService/${method}` && l.grpcCode === code,
    );
    if (line) return line;
    await new Promise((r) => setTimeout(r, 5));
  }
}

/** The first line (`msg`, the response-time line by default) of a method's call that `pick` accepts, once written. */
async function callLineAny(
  server: TestServer,
  method: string,
  pick: (l: Record<string, unknown>) => boolean,
  msg = "response time",
): Promise<Record<string, unknown>> {
  for (;;) {
    const line = server.logs.find((l) => l.msg === msg && l.grpcMethod === `/fixture.v1.FixtureService/${method}` && pick(l));
    if (line) return line;
    await new Promise((r) => setTimeout(r, 5));
  }
}

for (const mode of ["tcp", "unix", "in-process"] as const) {
  describe(`decode failures count with the code the HTTP client got (gateway mode ${mode})`, () => {
    let server: TestServer;
    before(async () => {
      server = await startTestServer([fixtureService], { GATEWAY_MODE: mode, GRPC_MAX_RECV_MSG_SIZE: String(MAX_MESSAGE) });
    });
    after(() => server.close());
    const url = (path: string) => `${server.httpUrl}${path}`;

    test("a client-stream message that is malformed JSON: 400, logged and counted InvalidArgument, not Canceled", async () => {
      const before = await handled(server, "Sum", "InvalidArgument");
      const reply = await post(url("/api/v1/sum"), "application/x-ndjson", ['{"value":1}\n', '{"value":}\n']);
      assert.equal(reply.status, 400);
      assert.equal(JSON.parse(reply.body).code, Code.INVALID_ARGUMENT);
      await callLine(server, "Sum", "InvalidArgument");
      assert.equal(await handled(server, "Sum", "InvalidArgument"), before + 1);
      assert.equal(await handled(server, "Sum", "Canceled"), 0);
    });

    test("a bidi message over the size limit: a last error line of code 8, logged and counted ResourceExhausted", async () => {
      const before = await handled(server, "Chat", "ResourceExhausted");
      const reply = await post(url("/api/v1/chat"), "application/x-ndjson", ['{"text":"a"}\n', `{"text":"${"y".repeat(MAX_MESSAGE)}"}\n`]);
      const last = JSON.parse(reply.body.trim().split("\n").at(-1)!);
      assert.equal((last.error ?? last).code, Code.RESOURCE_EXHAUSTED);
      await callLine(server, "Chat", "ResourceExhausted");
      assert.equal(await handled(server, "Chat", "ResourceExhausted"), before + 1);
      assert.equal(await handled(server, "Chat", "Canceled"), 0);
    });

    test("a REST body that cannot be decoded is counted InvalidArgument", async () => {
      const before = await handled(server, "Echo", "InvalidArgument");
      const reply = await post(url("/api/v1/echo"), "application/json", ['{"message":']);
      assert.equal(reply.status, 400);
      assert.equal(await handled(server, "Echo", "InvalidArgument"), before + 1);
    });
  });
}

describe("decode failures over gRPC-Web and Connect", () => {
  let server: TestServer;
  before(async () => {
    server = await startTestServer([fixtureService]);
  });
  after(() => server.close());
  const echo = () => `${server.httpUrl}/fixture.v1.FixtureService/Echo`;

  test("an undecodable Connect JSON body and gRPC-Web frame are counted InvalidArgument", async () => {
    const before = await handled(server, "Echo", "InvalidArgument");
    const connect = await fetch(echo(), { method: "POST", headers: { "content-type": "application/json" }, body: "{nope" });
    assert.equal(connect.status, 400);
    const frame = Buffer.from([0, 0, 0, 0, 3, 0xff, 0xff, 0xff]); // a message of 3 bytes that is no protobuf
    const web = await fetch(echo(), { method: "POST", headers: { "content-type": "application/grpc-web+proto" }, body: frame });
    assert.equal(web.headers.get("grpc-status") ?? "", "");
    assert.equal(await handled(server, "Echo", "InvalidArgument"), before + 2);
  });

  test("a Connect GET whose client disconnects is logged and counted Canceled, not Aborted", async () => {
    const message = encodeURIComponent(JSON.stringify({ message: "slow", delayMs: 5000 }));
    // With debug logs on for this call, its handler says "echo received" once it runs: then the client leaves.
    const req = httpRequest(`${echo()}?connect=v1&encoding=json&message=${message}`, { headers: { "x-debug-log-level": "debug" } });
    req.on("error", () => {});
    req.end();
    await callLineAny(server, "Echo", () => true, "echo received");
    req.destroy();
    const line = await callLineAny(server, "Echo", (l) => l.protocol === "connect");
    assert.equal(line.grpcCode, "Canceled");
    assert.equal(await handled(server, "Echo", "Canceled"), 1);
    assert.equal(await handled(server, "Echo", "Aborted"), 0);
  });

  for (const [name, type, body] of [
    ["Connect", "application/json", () => Buffer.from(JSON.stringify({ message: "slow", delayMs: 5000 }))],
    [
      "gRPC-Web",
      "application/grpc-web+proto",
      () => envelope(0, Buffer.from(toBinary(EchoRequestSchema, create(EchoRequestSchema, { message: "slow", delayMs: 5000 })))),
    ],
  ] as const) {
    test(`a ${name} unary call over HTTP/2 whose client resets the stream is logged and counted Canceled, not OK`, async () => {
      const trace = `h2-leave-${name}`;
      const session = connect(server.httpUrl);
      session.on("error", () => {});
      const stream = session.request({
        ":method": "POST",
        ":path": "/fixture.v1.FixtureService/Echo",
        "content-type": type,
        "x-trace-id": trace,
        "x-debug-log-level": "debug",
      });
      stream.on("error", () => {});
      stream.end(body());
      // Its handler says "echo received" once it runs: then the client leaves.
      await callLineAny(server, "Echo", (l) => l.trace === trace, "echo received");
      stream.close(http2.constants.NGHTTP2_CANCEL);
      const line = await callLineAny(server, "Echo", (l) => l.trace === trace);
      session.close();
      assert.equal(line.grpcCode, "Canceled");
    });
  }

  test("a Connect GET whose message cannot be decoded is 400 invalid_argument, not 500", async () => {
    for (const query of ["encoding=proto&base64=1&message=__8", "encoding=proto&message=%FF%FF%FF", "encoding=json&message=%7Bnope"]) {
      const res = await fetch(`${echo()}?connect=v1&${query}`);
      assert.equal(res.status, 400, query);
      assert.equal(((await res.json()) as { code: string }).code, "invalid_argument", query);
    }
  });
});

/** One length-prefixed message (Connect streams, gRPC-Web) with the given flags. */
function envelope(flags: number, data: Buffer): Buffer {
  const head = Buffer.alloc(5);
  head[0] = flags;
  head.writeUInt32BE(data.length, 1);
  return Buffer.concat([head, data]);
}

describe("decode failures inside Connect's own handler (the forms the fast paths leave to it)", () => {
  let server: TestServer;
  before(async () => {
    server = await startTestServer([fixtureService], { GRPC_MAX_RECV_MSG_SIZE: String(MAX_MESSAGE) });
  });
  after(() => server.close());
  const url = (method: string) => `${server.httpUrl}/fixture.v1.FixtureService/${method}`;

  test("a gzip-compressed Connect body that cannot be decoded: 400 invalid_argument, counted InvalidArgument", async () => {
    const before = await handled(server, "Echo", "InvalidArgument");
    const res = await fetch(url("Echo"), {
      method: "POST",
      headers: { "content-type": "application/json", "content-encoding": "gzip" },
      body: gzipSync('{"message":'),
    });
    assert.equal(res.status, 400);
    assert.equal(((await res.json()) as { code: string }).code, "invalid_argument");
    assert.equal(await handled(server, "Echo", "InvalidArgument"), before + 1);
  });

  test("a gzip-compressed binary Connect body that cannot be decoded: 400 invalid_argument as uncompressed, not 500 internal", async () => {
    const before = await handled(server, "Echo", "InvalidArgument");
    const res = await fetch(url("Echo"), {
      method: "POST",
      headers: { "content-type": "application/proto", "content-encoding": "gzip", "accept-encoding": "gzip" },
      body: gzipSync(Buffer.from([0xff, 0xff, 0xff])),
    });
    assert.equal(res.status, 400);
    const error = (await res.json()) as { code: string; message: string };
    assert.equal(error.code, "invalid_argument");
    assert.match(error.message, /parse binary/);
    assert.equal(await handled(server, "Echo", "InvalidArgument"), before + 1);
    // The same bytes uncompressed (the fast path) get the same answer.
    const plain = await fetch(url("Echo"), {
      method: "POST",
      headers: { "content-type": "application/proto" },
      body: Buffer.from([0xff, 0xff, 0xff]),
    });
    assert.equal(plain.status, 400);
    assert.equal(((await plain.json()) as { code: string }).code, "invalid_argument");
  });

  test("a Connect call with a malformed Connect-Timeout-Ms: 400 invalid_argument, counted InvalidArgument", async () => {
    const before = await handled(server, "Echo", "InvalidArgument");
    const res = await fetch(url("Echo"), {
      method: "POST",
      headers: { "content-type": "application/json", "connect-timeout-ms": "soon" },
      body: '{"message":"hi"}',
    });
    assert.equal(res.status, 400);
    assert.equal(await handled(server, "Echo", "InvalidArgument"), before + 1);
  });

  test("a gzip-compressed Connect GET whose message cannot be decoded: 400 invalid_argument, counted InvalidArgument", async () => {
    const before = await handled(server, "Echo", "InvalidArgument");
    const message = gzipSync('{"message":').toString("base64url");
    const res = await fetch(`${url("Echo")}?connect=v1&encoding=json&compression=gzip&base64=1&message=${message}`);
    assert.equal(res.status, 400);
    assert.equal(((await res.json()) as { code: string }).code, "invalid_argument");
    assert.equal(await handled(server, "Echo", "InvalidArgument"), before + 1);
  });

  for (const [name, transport] of [
    ["Connect", createConnectTransport],
    ["gRPC-Web", createGrpcWebTransport],
  ] as const) {
    test(`a ${name} client's compressed message over the size limit once decompressed is counted ResourceExhausted`, async () => {
      const before = await handled(server, "Echo", "ResourceExhausted");
      const client = createClient(
        FixtureService,
        transport({ baseUrl: server.httpUrl, httpVersion: "1.1", sendCompression: compressionGzip }),
      );
      const outcome = await client.echo({ message: "x".repeat(MAX_MESSAGE * 2) }).then(
        () => "answered",
        (err: unknown) => ConnectError.from(err),
      );
      assert.ok(outcome instanceof ConnectError, String(outcome));
      assert.equal(outcome.code, ConnectCode.ResourceExhausted, outcome.message);
      assert.equal(await handled(server, "Echo", "ResourceExhausted"), before + 1);
    });
  }

  test("a Connect server-stream request whose message cannot be decoded: an invalid_argument end message, counted InvalidArgument", async () => {
    const before = await handled(server, "Countdown", "InvalidArgument");
    const res = await fetch(url("Countdown"), {
      method: "POST",
      headers: { "content-type": "application/connect+json" },
      body: envelope(0, Buffer.from('{"from":')),
    });
    const body = Buffer.from(await res.arrayBuffer());
    assert.equal(body[0], 2, "an end-stream message");
    assert.equal((JSON.parse(body.subarray(5).toString()) as { error: { code: string } }).error.code, "invalid_argument");
    assert.equal(await handled(server, "Countdown", "InvalidArgument"), before + 1);
  });

  test("a gRPC-Web JSON call whose message cannot be decoded: grpc-status 3 in the trailer frame, counted InvalidArgument", async () => {
    const before = await handled(server, "Echo", "InvalidArgument");
    const res = await fetch(url("Echo"), {
      method: "POST",
      headers: { "content-type": "application/grpc-web+json" },
      body: envelope(0, Buffer.from('{"message":')),
    });
    const body = Buffer.from(await res.arrayBuffer());
    assert.equal(body[0], 0x80, "a trailer frame alone");
    assert.match(body.subarray(5).toString(), /grpc-status: ?3\r\n/);
    assert.equal(await handled(server, "Echo", "InvalidArgument"), before + 1);
  });

  test("a gRPC-Web text call whose binary message cannot be decoded is counted with the code in its trailer", async () => {
    const res = await fetch(url("Echo"), {
      method: "POST",
      headers: { "content-type": "application/grpc-web-text" },
      body: envelope(0, Buffer.from([0xff, 0xff, 0xff])).toString("base64"),
    });
    const trailer = Buffer.from(await res.text(), "base64")
      .subarray(5)
      .toString();
    const code = Number(/grpc-status: ?(\d+)/.exec(trailer)?.[1]);
    assert.notEqual(code, Code.OK, trailer);
    // Connect's handler answers a binary message it cannot parse Internal ("parse binary"), the fast path InvalidArgument.
    assert.equal(await handled(server, "Echo", codeName(code)), 1, `counted ${codeName(code)}`);
  });

  test("a call Connect's handler serves is counted once, by the chain: OK, nothing refused", async () => {
    const ok = await handled(server, "Echo", "OK");
    const client = createClient(
      FixtureService,
      createConnectTransport({ baseUrl: server.httpUrl, httpVersion: "1.1", sendCompression: compressionGzip }),
    );
    await client.echo({ message: "y".repeat(1000) }, { headers: { "connect-protocol-version": "1" } });
    const res = await fetch(url("Countdown"), {
      method: "POST",
      headers: { "content-type": "application/connect+json" },
      body: envelope(0, Buffer.from('{"from":2}')),
    });
    await res.arrayBuffer();
    assert.equal(await handled(server, "Echo", "OK"), ok + 1);
    assert.equal(await handled(server, "Countdown", "OK"), 1);
  });
});
