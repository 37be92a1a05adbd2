/**
 * A stream's deadline ends the call with DEADLINE_EXCEEDED on every transport, even when the handler
 * ignores its signal: it is the chain's timeout step that ends the call, through the stream objects,
 * not each transport on its own. Each transport is driven by a real client (grpc-js, fetch on the
 * gateway in its three modes, a WebSocket client, the Connect project's client), and each call leaves
 * one response-time line with DeadlineExceeded.
 */
import assert from "node:assert/strict";
import { once } from "node:events";
import { type IncomingMessage, request } from "node:http";
import { after, before, describe, test } from "node:test";
import { create } from "@bufbuild/protobuf";
import { Code as ConnectCode, ConnectError, createClient as createConnectClient } from "@connectrpc/connect";
import { createConnectTransport } from "@connectrpc/connect-node";
import { WebSocket } from "ws";
import { WS_PROTOCOL } from "../../src/framework/browser/websocket.js";
import { Code, defineService } from "../../src/framework/index.js";
import { rawClient, statusOfCall } from "../../src/framework/testing/grpc-streams.js";
import { startTestServer, type TestServer } from "../../src/framework/testing/harness.js";
import { CountdownRequestSchema, FixtureService } from "../gen/fixture/v1/fixture_pb.js";

/** Never settles: a handler awaiting it ignores its signal. */
const forever = new Promise<never>(() => {});

/** Errors the Chat handler's reads failed with. */
const readErrors: unknown[] = [];

const deaf = defineService(FixtureService, {
  handlers: {
    // One message, then a wait that no signal ends.
    async *countdown(request) {
      yield { remaining: request.from };
      await forever;
    },
    // Reads without watching its signal: only a failed read (or the end of input) stops it.
    async *chat(requests) {
      try {
        for await (const request of requests) yield { text: request.text };
      } catch (err) {
        readErrors.push(err);
        throw err;
      }
      await forever;
    },
  },
});

async function responseLine(server: TestServer, method: string, protocol?: string): Promise<Record<string, unknown>> {
  for (;;) {
    const line = server.logs.find(
      (l) => l.msg === "response time" && l.grpcMethod === `/fixture.v1.FixtureService/${method}` && (!protocol || l.protocol === protocol),
    );
    if (line) return line;
    await new Promise((r) => setImmediate(r));
  }
}

describe("a stream's deadline ends the call even when the handler ignores its signal", () => {
  for (const mode of ["tcp", "unix", "in-process"] as const) {
    describe(`gateway ${mode}`, () => {
      let server: TestServer;
      before(async () => {
        server = await startTestServer([deaf], { GATEWAY_MODE: mode });
      });
      after(() => server.close());

      test("a server stream ends with a DEADLINE_EXCEEDED error line after its first message", async () => {
        const res = await fetch(`${server.httpUrl}/api/v1/countdown/3`, { headers: { "grpc-timeout": "200m" } });
        assert.equal(res.status, 200);
        const lines = (await res.text())
          .trim()
          .split("\n")
          .map((l) => JSON.parse(l));
        assert.deepEqual(lines[0], { result: { remaining: 3 } });
        // Over the gRPC hop, grpc-js's own timer may answer first ("Deadline exceeded"): the code is what counts.
        assert.equal(lines.length, 2);
        assert.equal(lines[1].error.code, Code.DEADLINE_EXCEEDED);
        const line = await responseLine(server, "Countdown");
        assert.equal(line.grpcCode, "DeadlineExceeded");
      });

      test("a bidi call whose handler waits for a request that never comes ends with a DEADLINE_EXCEEDED line", async () => {
        const url = new URL(`${server.httpUrl}/api/v1/chat`);
        const req = request({
          host: url.hostname,
          port: url.port,
          path: url.pathname,
          method: "POST",
          headers: { "grpc-timeout": "200m", "content-type": "application/x-ndjson" },
        });
        req.write(`${JSON.stringify({ text: "hi" })}\n`); // and the body stays open
        const [res] = (await once(req, "response")) as [IncomingMessage];
        let body = "";
        for await (const chunk of res) body += chunk;
        req.destroy();
        const lines = body
          .trim()
          .split("\n")
          .map((l) => JSON.parse(l));
        assert.deepEqual(lines[0], { result: { text: "hi", seq: 0 } });
        assert.equal(lines.length, 2);
        assert.equal(lines[1].error.code, Code.DEADLINE_EXCEEDED);
        assert.equal((await responseLine(server, "Chat")).grpcCode, "DeadlineExceeded");
      });
    });
  }

  describe("gRPC, WebSocket and Connect", () => {
    let server: TestServer;
    before(async () => {
      server = await startTestServer([deaf]);
    });
    after(() => server.close());

    test("gRPC: a server stream ends DEADLINE_EXCEEDED and its response-time line says so", async () => {
      const client = rawClient(FixtureService, server.grpcAddress);
      try {
        const call = client.countdown(create(CountdownRequestSchema, { from: 2 }), { deadline: Date.now() + 200 }) as NodeJS.EventEmitter;
        const status = statusOfCall(call);
        call.on("data", () => {});
        assert.equal((await status).code, Code.DEADLINE_EXCEEDED);
        const line = await responseLine(server, "Countdown");
        assert.equal(line.grpcCode, "DeadlineExceeded");
        assert.equal(line.msgs_sent, 1);
      } finally {
        client.close();
      }
    });

    test("WebSocket: a server stream ends with the DEADLINE_EXCEEDED frame, then a normal close", async () => {
      const ws = new WebSocket(`${server.httpUrl.replace(/^http/, "ws")}/api/v1/countdown/4`, [WS_PROTOCOL, "grpc-timeout.200m"]);
      const frames: unknown[] = [];
      ws.on("message", (data) => frames.push(JSON.parse(String(data))));
      await once(ws, "open");
      ws.send("{}");
      const [code] = (await once(ws, "close")) as [number];
      assert.equal(code, 1000);
      assert.deepEqual(frames, [
        { result: { remaining: 4 } },
        { error: { code: Code.DEADLINE_EXCEEDED, message: "deadline exceeded", details: [] } },
      ]);
      const line = await responseLine(server, "Countdown", "websocket");
      assert.equal(line.grpcCode, "DeadlineExceeded");
    });

    test("WebSocket: a bidi handler waiting for its next request has its read fail with DEADLINE_EXCEEDED", async () => {
      const ws = new WebSocket(`${server.httpUrl.replace(/^http/, "ws")}/fixture.v1.FixtureService/Chat`, [
        WS_PROTOCOL,
        "grpc-timeout.200m",
      ]);
      const frames: unknown[] = [];
      ws.on("message", (data) => frames.push(JSON.parse(String(data))));
      await once(ws, "open");
      ws.send(JSON.stringify({ text: "hi" }));
      const [code] = (await once(ws, "close")) as [number];
      assert.equal(code, 1000);
      assert.deepEqual(frames, [
        { result: { text: "hi", seq: 0 } },
        { error: { code: Code.DEADLINE_EXCEEDED, message: "deadline exceeded", details: [] } },
      ]);
      for (;;) {
        if (readErrors.length > 0) break;
        await new Promise((r) => setImmediate(r));
      }
      assert.equal((readErrors.at(-1) as { code?: number }).code, Code.DEADLINE_EXCEEDED);
    });

    test("Connect: a server stream ends deadline_exceeded", async () => {
      const client = createConnectClient(FixtureService, createConnectTransport({ baseUrl: server.httpUrl, httpVersion: "1.1" }));
      const seen: number[] = [];
      const err = await (async () => {
        for await (const m of client.countdown({ from: 5 }, { timeoutMs: 200 })) seen.push(m.remaining);
      })().catch((e: unknown) => e);
      assert.deepEqual(seen, [5]);
      assert.equal(ConnectError.from(err).code, ConnectCode.DeadlineExceeded);
      const line = await responseLine(server, "Countdown", "connect");
      assert.equal(line.grpcCode, "DeadlineExceeded");
    });
  });
});
