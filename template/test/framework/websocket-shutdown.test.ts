/**
 * Shutdown ends the WebSocket calls still open when the HTTP server closes: each gets the UNAVAILABLE
 * status as its last frame and a 1001 (going away) close, so the client knows to reconnect elsewhere;
 * the handler's signal aborts with it, the response-time line says Unavailable, and the shutdown waits
 * for the sockets to close instead of running out its budget. Real WebSocket clients (ws).
 */
import assert from "node:assert/strict";
import { once } from "node:events";
import { test } from "node:test";
import { setTimeout as sleep } from "node:timers/promises";
import { WebSocket } from "ws";
import { WS_PROTOCOL } from "../../src/framework/browser/websocket.js";
import { type CallContext, Code, defineService, type GrpcError } from "../../src/framework/index.js";
import { startTestServer } from "../../src/framework/testing/harness.js";
import { FixtureService } from "../gen/fixture/v1/fixture_pb.js";

const signals: AbortSignal[] = [];

const service = defineService(FixtureService, {
  handlers: {
    // Echoes every message until the client half-closes.
    async *chat(requests, ctx: CallContext) {
      signals.push(ctx.signal);
      for await (const request of requests) yield { text: request.text };
    },
    // Reads one request, then waits on a timer its signal cancels (which throws an AbortError, not a status).
    async sum(requests, ctx: CallContext) {
      for await (const _ of requests) break;
      signals.push(ctx.signal); // and now it waits
      await sleep(60_000, undefined, { signal: ctx.signal });
      return {};
    },
    // A long countdown: one message, then a wait the shutdown interrupts.
    async *countdown(request, ctx: CallContext) {
      signals.push(ctx.signal);
      yield { remaining: request.from };
      await once(ctx.signal, "abort");
    },
  },
});

/** Opens a call, sends `first`, and waits for its first answer; `ended` has every frame and the close code. */
async function openCall(url: string, first: string) {
  const ws = new WebSocket(url, [WS_PROTOCOL]);
  const frames: unknown[] = [];
  const answered = once(ws, "message");
  ws.on("message", (data) => frames.push(JSON.parse(String(data))));
  const ended = once(ws, "close").then(([code]) => ({ frames, code: code as number }));
  await once(ws, "open");
  ws.send(first);
  await answered;
  return { ended };
}

/** Opens a client-streaming call and sends `first`; resolves with every frame and the close code. */
async function openSilent(url: string, first: string) {
  const ws = new WebSocket(url, [WS_PROTOCOL]);
  const frames: unknown[] = [];
  ws.on("message", (data) => frames.push(JSON.parse(String(data))));
  const ended = once(ws, "close").then(([code]) => ({ frames, code: code as number }));
  await once(ws, "open");
  ws.send(first);
  return ended;
}

test("shutdown ends open WebSocket calls with UNAVAILABLE and a 1001 close, and waits for them", async () => {
  const server = await startTestServer([service], { SHUTDOWN_DURATION_IN_SECONDS: "20" });
  const base = server.httpUrl.replace(/^http/, "ws");
  const chat = await openCall(`${base}/fixture.v1.FixtureService/Chat`, JSON.stringify({ text: "hi" }));
  const countdown = await openCall(`${base}/api/v1/countdown/7`, "{}");
  const sum = openSilent(`${base}/fixture.v1.FixtureService/Sum`, JSON.stringify({ value: "1" }));
  while (signals.length < 3) await new Promise((r) => setImmediate(r)); // the Sum handler is running
  await server.close();
  const unavailable = { error: { code: Code.UNAVAILABLE, message: "server is shutting down", details: [] } };
  assert.deepEqual(await chat.ended, { frames: [{ result: { text: "hi", seq: 0 } }, unavailable], code: 1001 });
  assert.deepEqual(await countdown.ended, { frames: [{ result: { remaining: 7 } }, unavailable], code: 1001 });
  assert.deepEqual(await sum, { frames: [unavailable], code: 1001 });
  for (const signal of signals) {
    assert.ok(signal.aborted);
    assert.equal((signal.reason as GrpcError).code, Code.UNAVAILABLE);
  }
  const lineCodes = () => server.logs.filter((l) => l.msg === "response time" && l.protocol === "websocket").map((l) => l.grpcCode);
  while (lineCodes().length < 3) await new Promise((r) => setImmediate(r));
  const lines = lineCodes();
  assert.deepEqual(lines.sort(), ["Unavailable", "Unavailable", "Unavailable"], "each line says what its client got");
  assert.ok(!server.logs.some((l) => l.msg === "server error reported"), "a shutdown is not reported as an outage");
  assert.ok(!server.logs.some((l) => l.msg === "shutdown budget spent: servers force-stopped"), "the shutdown did not run out its budget");
});
