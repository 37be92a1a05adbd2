/**
 * Codes are the ones the client got: a request an HTTP client sent that cannot be decoded is logged and counted
 * in grpc_server_handled_total with the code it was answered, as over gRPC. Streamed messages (INVALID_ARGUMENT,
 * RESOURCE_EXHAUSTED, never CANCELLED), REST bodies, gRPC-Web and Connect bodies; a Connect GET with an
 * undecodable `message` is 400 invalid_argument. node:http and fetch against a real server, in each gateway mode.
 */
import assert from "node:assert/strict";
import { request as httpRequest } from "node:http";
import { after, before, describe, test } from "node:test";
import { Code } from "../../src/framework/index.js";
import { startTestServer, type TestServer } from "../../src/framework/testing/harness.js";
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
  });

  test("a Connect GET whose message cannot be decoded is 400 invalid_argument, not 500", async () => {
    for (const query of ["encoding=proto&base64=1&message=__8", "encoding=proto&message=%FF%FF%FF", "encoding=json&message=%7Bnope"]) {
      const res = await fetch(`${echo()}?connect=v1&${query}`);
      assert.equal(res.status, 400, query);
      assert.equal(((await res.json()) as { code: string }).code, "invalid_argument", query);
    }
  });
});
