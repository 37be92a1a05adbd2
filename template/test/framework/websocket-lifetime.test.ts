/**
 * How long a WebSocket call lives. The keepalive: a client that stops answering pings (a half-open
 * connection) is dropped and its call cancelled, so the handler does not hold on until shutdown; a
 * client that answers keeps its call (sweeps run on demand with sweepKeepalivesNow, not on the
 * interval). Deadlines: a `grpc-timeout.<value>` subprotocol entry (browsers) or a grpc-timeout header
 * (other clients) bounds the call like any gRPC deadline.
 */
import assert from "node:assert/strict";
import { once } from "node:events";
import { after, before, describe, test } from "node:test";
import { WebSocket } from "ws";
import { sweepKeepalivesNow } from "../../src/framework/browser/keepalive.js";
import { WS_PROTOCOL } from "../../src/framework/browser/websocket.js";
import { type CallContext, Code, defineService, GrpcError } from "../../src/framework/index.js";
import { startTestServer, type TestServer } from "../../src/framework/testing/harness.js";
import { TestService } from "../gen/grpcsvc_test/interop/test_pb.js";
import { waitFor } from "./support/wait.js";

describe("WebSocket keepalive", () => {
  let server: TestServer;
  let url: string;
  /** The signal of each FullDuplexCall handler, as it starts. */
  const started: ((signal: AbortSignal) => void)[] = [];
  const nextCall = () => new Promise<AbortSignal>((resolve) => started.push(resolve));

  const service = defineService(TestService, {
    handlers: {
      async *fullDuplexCall(requests, ctx: CallContext) {
        started.shift()?.(ctx.signal);
        for await (const request of requests) yield { payload: { body: new Uint8Array(request.responseParameters[0]?.size ?? 0) } };
      },
    },
  });

  before(async () => {
    server = await startTestServer([service]);
    url = `${server.httpUrl.replace(/^http/, "ws")}/grpc.testing.TestService/FullDuplexCall`;
  });
  after(() => server.close());

  test("a client that never answers a ping is dropped, its handler's signal aborts and the call ends CANCELLED", async () => {
    const handler = nextCall();
    const client = new WebSocket(url, [WS_PROTOCOL], { autoPong: false });
    await once(client, "open");
    const signal = await handler;
    const closed = once(client, "close");
    const pinged = once(client, "ping");
    sweepKeepalivesNow(); // pings
    await pinged;
    assert.equal(signal.aborted, false, "one unanswered ping is not yet a lost client");
    sweepKeepalivesNow(); // no pong since: terminated
    const [code] = (await closed) as [number];
    assert.equal(code, 1006, "dropped without a close frame");
    if (!signal.aborted) await once(signal, "abort");
    assert.ok(signal.reason instanceof GrpcError);
    assert.equal(signal.reason.code, Code.CANCELLED);
    const line = await waitFor(() =>
      server.logs.find(
        (l) => l.msg === "response time" && l.protocol === "websocket" && l.grpcMethod === "/grpc.testing.TestService/FullDuplexCall",
      ),
    );
    assert.equal(line.grpcCode, "Canceled");
  });

  test("a client that answers pings keeps its call across sweeps and ends it OK", async () => {
    const handler = nextCall();
    const client = new WebSocket(url, [WS_PROTOCOL]); // answers pings, as browsers do
    await once(client, "open");
    const signal = await handler;
    const frames: unknown[] = [];
    client.on("message", (data) => frames.push(JSON.parse(String(data))));
    // The pong goes out before the ping event; a request sent after it reaches the server after the
    // pong, so its answer proves the server has read the pong before the next sweep.
    for (const size of [1, 2]) {
      const pinged = once(client, "ping");
      sweepKeepalivesNow();
      await pinged;
      client.send(JSON.stringify({ responseParameters: [{ size }] }));
      await once(client, "message");
    }
    sweepKeepalivesNow();
    const closed = once(client, "close");
    client.send("");
    const [code] = (await closed) as [number];
    assert.equal(code, 1000);
    assert.equal(signal.aborted, false);
    assert.deepEqual(frames, [
      { result: { payload: { type: "COMPRESSABLE", body: "AA==" } } },
      { result: { payload: { type: "COMPRESSABLE", body: "AAA=" } } },
      { end: {} },
    ]);
  });
});

describe("WebSocket deadlines", () => {
  let server: TestServer;
  let url: string;
  /** The deadline each HalfDuplexCall handler saw. */
  const deadlines: number[] = [];

  const service = defineService(TestService, {
    handlers: {
      // Never answers: waits for its signal (the deadline) and ends with its reason.
      async *halfDuplexCall(_requests, ctx: CallContext) {
        deadlines.push(ctx.deadline);
        if (!ctx.signal.aborted) await once(ctx.signal, "abort");
        if (ctx.signal.reason) throw ctx.signal.reason;
        yield {}; // not reached: an aborted signal has a reason
      },
    },
  });

  before(async () => {
    server = await startTestServer([service]);
    url = `${server.httpUrl.replace(/^http/, "ws")}/grpc.testing.TestService/HalfDuplexCall`;
  });
  after(() => server.close());

  /** Opens a call and collects its frames until the close. */
  async function frames(client: WebSocket): Promise<{ frames: unknown[]; code: number; protocol: string }> {
    const out: unknown[] = [];
    client.on("message", (data) => out.push(JSON.parse(String(data))));
    await once(client, "open");
    const protocol = client.protocol;
    const [code] = (await once(client, "close")) as [number];
    return { frames: out, code, protocol };
  }

  test("a grpc-timeout.<value> subprotocol entry is the call's deadline: it ends DEADLINE_EXCEEDED, then a normal close", async () => {
    const opened = Date.now();
    const out = await frames(new WebSocket(url, [WS_PROTOCOL, "grpc-timeout.50m"]));
    assert.equal(out.protocol, WS_PROTOCOL, "the entry is read, never selected");
    assert.deepEqual(out.frames, [{ error: { code: Code.DEADLINE_EXCEEDED, message: "deadline exceeded", details: [] } }]);
    assert.equal(out.code, 1000);
    const deadline = deadlines.at(-1)!;
    assert.ok(deadline >= opened + 50 && deadline < Number.POSITIVE_INFINITY, `deadline ${deadline - opened} ms after the open`);
  });

  test("a grpc-timeout header on the upgrade (clients that can set headers) is the deadline too", async () => {
    const out = await frames(new WebSocket(url, [WS_PROTOCOL], { headers: { "grpc-timeout": "40m" } }));
    assert.deepEqual(out.frames, [{ error: { code: Code.DEADLINE_EXCEEDED, message: "deadline exceeded", details: [] } }]);
  });

  test("a server stream whose deadline passes before its request message arrives ends DEADLINE_EXCEEDED", async () => {
    const stream = url.replace(/HalfDuplexCall$/, "StreamingOutputCall");
    const out = await frames(new WebSocket(stream, [WS_PROTOCOL, "grpc-timeout.30m"]));
    assert.deepEqual(out.frames, [{ error: { code: Code.DEADLINE_EXCEEDED, message: "deadline exceeded", details: [] } }]);
    assert.equal(out.code, 1000);
  });

  test("a malformed timeout entry or header is refused before the upgrade (400)", async () => {
    for (const init of [
      { protocols: [WS_PROTOCOL, "grpc-timeout.soon"] },
      { protocols: [WS_PROTOCOL], headers: { "grpc-timeout": "1year" } },
    ]) {
      const client = new WebSocket(url, init.protocols, { headers: init.headers });
      client.on("error", () => {});
      const [, res] = (await once(client, "unexpected-response")) as [unknown, import("node:http").IncomingMessage];
      assert.equal(res.statusCode, 400);
      res.resume();
      client.terminate();
    }
  });
});
