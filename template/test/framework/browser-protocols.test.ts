/**
 * gRPC-Web and the Connect protocol on the HTTP port, called by the Connect project's own Node clients
 * (createGrpcWebTransport, createConnectTransport) typed from the service's generated code: unary,
 * server streaming, errors with details, Connect GET, timeouts, auth, and one chain entry per call.
 */
import assert from "node:assert/strict";
import { once } from "node:events";
import { type IncomingMessage, request } from "node:http";
import { after, before, describe, test } from "node:test";
import { type Client, Code as ConnectCode, ConnectError, createClient, type Transport } from "@connectrpc/connect";
import { createConnectTransport, createGrpcWebTransport } from "@connectrpc/connect-node";
import { defineService } from "../../src/framework/index.js";
import { startTestServer, type TestServer } from "../../src/framework/testing/harness.js";
import { BadRequestSchema } from "../../src/gen/google/rpc/error_details_pb.js";
import { FixtureService } from "../gen/fixture/v1/fixture_pb.js";
import { fixtureService } from "./fixtures/fixture-service.js";
import { handled } from "./support/metrics.js";

type Protocol = "connect-json" | "connect-binary" | "grpc-web-binary" | "grpc-web-json";

function transport(protocol: Protocol, baseUrl: string): Transport {
  switch (protocol) {
    case "connect-json":
      return createConnectTransport({ baseUrl, httpVersion: "1.1" });
    case "connect-binary":
      return createConnectTransport({ baseUrl, httpVersion: "1.1", useBinaryFormat: true });
    case "grpc-web-binary":
      return createGrpcWebTransport({ baseUrl, httpVersion: "1.1", useBinaryFormat: true });
    case "grpc-web-json":
      // The Node transport never sends the base64 text form; a raw request below does.
      return createGrpcWebTransport({ baseUrl, httpVersion: "1.1", useBinaryFormat: false });
  }
}

describe("gRPC-Web and Connect on the HTTP port", () => {
  let server: TestServer;
  before(async () => {
    server = await startTestServer([fixtureService]);
  });
  after(() => server.close());

  for (const protocol of ["connect-json", "connect-binary", "grpc-web-binary", "grpc-web-json"] as Protocol[]) {
    describe(protocol, () => {
      let client: Client<typeof FixtureService>;
      before(() => {
        client = createClient(FixtureService, transport(protocol, server.httpUrl));
      });

      test("Echo answers with the message and the trace ID, which the response header echoes", async () => {
        let header: Headers | undefined;
        const res = await client.echo({ message: `hello ${protocol}` }, { onHeader: (h) => (header = h) });
        assert.equal(res.message, `hello ${protocol}`);
        assert.match(res.traceId, /^[0-9a-f-]{36}$/);
        assert.equal(header?.get("x-trace-id"), res.traceId);
      });

      test("Countdown streams every message, then ends OK", async () => {
        const seen: number[] = [];
        for await (const m of client.countdown({ from: 4 })) seen.push(m.remaining);
        assert.deepEqual(seen, [4, 3, 2, 1]);
      });

      test("Fail answers the code and message it was given", async () => {
        const err = await client.fail({ code: ConnectCode.NotFound, message: "no such thing" }).catch((e: unknown) => e);
        assert.ok(err instanceof ConnectError);
        assert.equal(err.code, ConnectCode.NotFound);
        assert.equal(err.rawMessage, "no such thing");
      });

      test("a panic is INTERNAL 'internal error', never the thrown message", async () => {
        const err = ConnectError.from(await client.fail({ panic: true }).catch((e: unknown) => e));
        assert.equal(err.code, ConnectCode.Internal);
        assert.equal(err.rawMessage, "internal error");
      });

      test("an invalid request is INVALID_ARGUMENT with a typed BadRequest detail", async () => {
        const err = ConnectError.from(await client.echo({ message: "" }).catch((e: unknown) => e));
        assert.equal(err.code, ConnectCode.InvalidArgument);
        const [bad] = err.findDetails(BadRequestSchema);
        assert.deepEqual(
          bad?.fieldViolations.map((v) => v.field),
          ["message"],
        );
      });

      test("the protocol's timeout is the call's deadline", async () => {
        const err = ConnectError.from(await client.echo({ message: "slow", delayMs: 5000 }, { timeoutMs: 50 }).catch((e: unknown) => e));
        assert.equal(err.code, ConnectCode.DeadlineExceeded);
      });

      test("an error in the middle of a stream ends it with the status", async () => {
        const seen: number[] = [];
        const err = await (async () => {
          for await (const m of client.countdown({ from: 3, intervalMs: 5000 }, { timeoutMs: 200 })) seen.push(m.remaining);
        })().catch((e: unknown) => ConnectError.from(e));
        assert.deepEqual(seen, [3]);
        assert.equal(err?.code, ConnectCode.DeadlineExceeded);
      });
    });
  }

  test("Connect GET serves a NO_SIDE_EFFECTS method (Echo), and only such a method", async () => {
    const client = createClient(FixtureService, createConnectTransport({ baseUrl: server.httpUrl, httpVersion: "1.1", useHttpGet: true }));
    assert.equal((await client.echo({ message: "by GET" })).message, "by GET");
    const message = encodeURIComponent(JSON.stringify({ message: "plain GET" }));
    const res = await fetch(`${server.httpUrl}/fixture.v1.FixtureService/Echo?connect=v1&encoding=json&message=${message}`);
    assert.equal(res.status, 200);
    assert.equal(((await res.json()) as { message: string }).message, "plain GET");
    const fail = await fetch(`${server.httpUrl}/fixture.v1.FixtureService/Fail?connect=v1&encoding=json&message=%7B%7D`);
    assert.notEqual(fail.status, 200, "Fail has side effects: no GET");
  });

  test("Connect's error JSON carries the code name, the message and the details", async () => {
    const res = await fetch(`${server.httpUrl}/fixture.v1.FixtureService/Echo`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: '{"message":""}',
    });
    assert.equal(res.status, 400);
    const body = (await res.json()) as { code: string; message: string; details: { type: string }[] };
    assert.equal(body.code, "invalid_argument");
    assert.match(body.message, /^message: /);
    assert.deepEqual(
      body.details.map((d) => d.type),
      ["google.rpc.BadRequest"],
    );
  });

  test("Connect unary: malformed JSON is invalid_argument, a body over GRPC_MAX_RECV_MSG_SIZE resource_exhausted", async () => {
    const post = (body: string | Uint8Array, type = "application/json") =>
      fetch(`${server.httpUrl}/fixture.v1.FixtureService/Echo`, { method: "POST", headers: { "content-type": type }, body });
    const bad = await post('{"message":');
    assert.equal(bad.status, 400);
    assert.equal(((await bad.json()) as { code: string }).code, "invalid_argument");
    const big = await post(new Uint8Array(4 * 1024 * 1024 + 1), "application/proto");
    assert.equal(big.status, 429, "Connect's HTTP status for resource_exhausted");
    assert.equal(((await big.json()) as { code: string }).code, "resource_exhausted");
  });

  test("gRPC-Web text (base64) frames answer in the text form with the status in the trailer frame", async () => {
    // Echo{message:"t"}: field 1, length 1, "t".
    const frame = Buffer.from([0, 0, 0, 0, 3, 0x0a, 1, 0x74]);
    const res = await fetch(`${server.httpUrl}/fixture.v1.FixtureService/Echo`, {
      method: "POST",
      headers: { "content-type": "application/grpc-web-text", "x-grpc-web": "1" },
      body: frame.toString("base64"), // "AAAAAAMKAXQ=": padded
    });
    assert.equal(res.status, 200);
    assert.equal(res.headers.get("content-type"), "application/grpc-web-text+proto");
    // Each frame is base64-encoded with its own padding, as grpc-web clients expect.
    const bytes = Buffer.concat(((await res.text()).match(/[^=]+=*/g) ?? []).map((part) => Buffer.from(part, "base64")));
    const trailerStart = 5 + bytes.readUInt32BE(1);
    assert.equal(bytes[trailerStart], 0x80, "the last frame is the trailer frame");
    assert.match(bytes.subarray(trailerStart + 5).toString(), /grpc-status: ?0/);
    assert.equal(bytes.subarray(5, trailerStart)[2], 0x74, 'the Echo response\'s message field holds "t"');
  });

  test("a gRPC-Web text body that is not base64 is INVALID_ARGUMENT, and the server keeps serving", async () => {
    const res = await fetch(`${server.httpUrl}/fixture.v1.FixtureService/Echo`, {
      method: "POST",
      headers: { "content-type": "application/grpc-web-text", "x-grpc-web": "1" },
      body: "not base64 at all!",
    });
    const text = Buffer.from(await res.text(), "base64").toString("latin1");
    assert.match(res.headers.get("grpc-status") === "3" ? "grpc-status: 3" : text, /grpc-status: ?3\b/);
    const ok = await createClient(FixtureService, transport("grpc-web-binary", server.httpUrl)).echo({ message: "still here" });
    assert.equal(ok.message, "still here");
  });

  test("a gRPC-Web body that is not exactly one frame is INVALID_ARGUMENT in the trailer frame", async () => {
    for (const body of [Buffer.from([0, 0, 0, 0, 9, 1, 2]), Buffer.alloc(0), Buffer.from([0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1])]) {
      const res = await fetch(`${server.httpUrl}/fixture.v1.FixtureService/Echo`, {
        method: "POST",
        headers: { "content-type": "application/grpc-web+proto", "x-grpc-web": "1" },
        body,
      });
      assert.equal(res.status, 200);
      const bytes = Buffer.from(await res.arrayBuffer());
      assert.equal(bytes[0], 0x80, "a trailer frame alone");
      assert.match(
        bytes.subarray(5).toString(),
        /^grpc-status: 3\r\ngrpc-message: the body must be exactly one gRPC-Web message frame\r\n/,
      );
    }
  });

  test("a gRPC-Web body that goes on past its declared frame is refused at once, and only so much more is read", async () => {
    // The request is ours before fastify's body limit: without a bound here, a frame declaring 0 bytes followed by
    // an endless body would be buffered for as long as the client sends.
    const url = new URL(`${server.httpUrl}/fixture.v1.FixtureService/Echo`);
    const req = request(url, { method: "POST", headers: { "content-type": "application/grpc-web+proto", "x-grpc-web": "1" } });
    // Not once(): it would reject on the EPIPE or ECONNRESET a write may meet as the server closes the connection.
    const closed = new Promise((resolve) => req.once("close", resolve));
    req.on("error", () => {}); // the server closes the connection while this one is still sending
    req.write(Buffer.concat([Buffer.from([0, 0, 0, 0, 0]), Buffer.alloc(64 * 1024)]));
    const [res] = (await once(req, "response")) as [IncomingMessage];
    const answer = Buffer.concat(await res.toArray());
    assert.match(answer.subarray(5).toString(), /^grpc-status: 3\r\ngrpc-message: the body must be exactly one gRPC-Web message frame\r\n/);
    const chunk = Buffer.alloc(64 * 1024);
    let sent = 0;
    const pump = () => {
      while (!req.destroyed && sent < 64 * 1024 * 1024 && req.write(chunk)) sent += chunk.length;
    };
    req.on("drain", pump);
    pump();
    await closed; // past the discard bound (256 KiB) the server closes the connection
    assert.ok(sent < 16 * 1024 * 1024, `the server stopped reading (${sent} bytes sent after the answer)`);
    const client = createClient(FixtureService, createGrpcWebTransport({ baseUrl: server.httpUrl, httpVersion: "1.1" }));
    assert.equal((await client.echo({ message: "still serving" })).message, "still serving");
  });

  test("a message over GRPC_MAX_RECV_MSG_SIZE is RESOURCE_EXHAUSTED before it is read", async () => {
    const frame = Buffer.alloc(5);
    frame.writeUInt32BE(64 * 1024 * 1024, 1);
    const res = await fetch(`${server.httpUrl}/fixture.v1.FixtureService/Echo`, {
      method: "POST",
      headers: { "content-type": "application/grpc-web+proto", "x-grpc-web": "1" },
      body: frame,
    });
    assert.equal(res.headers.get("grpc-status") ?? (await res.text()).match(/grpc-status: ?(\d+)/)?.[1], "8");
  });

  test("each call enters the chain once: handled_total grows by one per call, whatever the protocol", async () => {
    const before = await handled(server, "Echo", "OK");
    for (const protocol of ["connect-json", "grpc-web-binary"] as Protocol[]) {
      await createClient(FixtureService, transport(protocol, server.httpUrl)).echo({ message: "count me" });
    }
    assert.equal(await handled(server, "Echo", "OK"), before + 2);
    const line = server.logs.filter((l) => l.msg === "response time" && l.httpPath === "/fixture.v1.FixtureService/Echo").at(-1);
    assert.equal(line?.protocol, "grpc-web");
  });
});

describe("gRPC-Web and Connect with authentication on", () => {
  let server: TestServer;
  before(async () => {
    server = await startTestServer([fixtureService], { API_KEYS: "k-1" });
  });
  after(() => server.close());

  test("a call without credentials is UNAUTHENTICATED (HTTP 401 with WWW-Authenticate for Connect), each counted once", async () => {
    const res = await fetch(`${server.httpUrl}/fixture.v1.FixtureService/Echo`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: '{"message":"x"}',
    });
    assert.equal(res.status, 401);
    assert.equal(res.headers.get("www-authenticate"), "Bearer");
    assert.equal(((await res.json()) as { code: string }).code, "unauthenticated");
    for (const protocol of ["connect-binary", "grpc-web-binary"] as Protocol[]) {
      const err = ConnectError.from(
        await createClient(FixtureService, transport(protocol, server.httpUrl))
          .echo({ message: "x" })
          .catch((e: unknown) => e),
      );
      assert.equal(err.code, ConnectCode.Unauthenticated, protocol);
    }
    assert.equal(await handled(server, "Echo", "Unauthenticated"), 3);
  });

  test("the API key travels as a plain header, as gRPC-Web and Connect clients send metadata", async () => {
    for (const protocol of ["connect-json", "grpc-web-binary"] as Protocol[]) {
      const client = createClient(FixtureService, transport(protocol, server.httpUrl));
      const res = await client.echo({ message: "let me in" }, { headers: { "x-api-key": "k-1" } });
      assert.equal(res.message, "let me in");
    }
  });
});

describe("response metadata over gRPC-Web and Connect", () => {
  // Handlers that set response headers and trailers: repeated, binary, and transport names that must not reach HTTP.
  const metadataService = defineService(FixtureService, {
    handlers: {
      echo(request, ctx) {
        ctx.responseHeader.add("x-color", "blue");
        ctx.responseHeader.add("x-color", "green");
        ctx.responseHeader.set("x-blob-bin", Buffer.from([0, 1, 2]));
        ctx.responseHeader.set("content-length", "1");
        ctx.responseHeader.set("content-type", "text/plain");
        ctx.responseTrailer.set("x-done", "yes");
        return { message: request.message };
      },
      async *countdown(request, ctx) {
        ctx.responseHeader.set("x-color", "red");
        ctx.responseHeader.set("content-type", "text/plain");
        for (let remaining = request.from; remaining >= 1; remaining--) yield { remaining };
        ctx.responseTrailer.set("x-done", "yes");
      },
    },
  });
  let server: TestServer;
  before(async () => {
    server = await startTestServer([metadataService]);
  });
  after(() => server.close());

  for (const protocol of ["connect-json", "connect-binary", "grpc-web-binary", "grpc-web-json"] as Protocol[]) {
    test(`${protocol}: headers and trailers arrive (base64 for -bin, repeated keys repeated); content-type and content-length stay the transport's`, async () => {
      const client = createClient(FixtureService, transport(protocol, server.httpUrl));
      let header: Headers | undefined;
      let trailer: Headers | undefined;
      const res = await client.echo({ message: "with metadata" }, { onHeader: (h) => (header = h), onTrailer: (t) => (trailer = t) });
      assert.equal(res.message, "with metadata");
      assert.equal(header?.get("x-color"), "blue, green");
      assert.equal(header?.get("x-blob-bin"), "AAEC");
      assert.notEqual(header?.get("content-type"), "text/plain");
      assert.equal(trailer?.get("x-done"), "yes");

      let streamHeader: Headers | undefined;
      let streamTrailer: Headers | undefined;
      const seen: number[] = [];
      for await (const m of client.countdown({ from: 2 }, { onHeader: (h) => (streamHeader = h), onTrailer: (t) => (streamTrailer = t) })) {
        seen.push(m.remaining);
      }
      assert.deepEqual(seen, [2, 1]);
      assert.equal(streamHeader?.get("x-color"), "red");
      assert.notEqual(streamHeader?.get("content-type"), "text/plain");
      assert.equal(streamTrailer?.get("x-done"), "yes");
    });
  }
});
