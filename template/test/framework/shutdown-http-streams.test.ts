/**
 * Shutdown ends every HTTP stream with a status (SPEC 4.12): a server stream whose handler ignores its signal (or a
 * bidi stream whose client never half-closes) is still open when SHUTDOWN_DURATION_IN_SECONDS runs out; it then ends with UNAVAILABLE in its protocol's own
 * form, so the client knows to retry elsewhere, instead of being cut with none: Connect's end-stream message,
 * gRPC-Web trailers, an NDJSON error line, an SSE `event: error` (the gateway in each mode). Real clients
 * (connect-node, node:http) against a real app. WebSockets: websocket-shutdown.test.ts; gRPC: drain-in-flight.
 */
import assert from "node:assert/strict";
import { request } from "node:http";
import { test } from "node:test";
import { Code as ConnectCode, ConnectError, createClient } from "@connectrpc/connect";
import { createConnectTransport, createGrpcWebTransport } from "@connectrpc/connect-node";
import { Code, defineService } from "../../src/framework/index.js";
import { startTestServer } from "../../src/framework/testing/harness.js";
import { FixtureService } from "../gen/fixture/v1/fixture_pb.js";

/** How long a client waits for its stream's end after the app stopped, before calling it cut with no status. */
const GIVE_UP_MS = 3000;

let started: () => void = () => {};

const service = defineService(FixtureService, {
  handlers: {
    // One message, then a wait that ignores the handler's signal: only the budget ends it.
    async *countdown(request) {
      yield { remaining: request.from };
      started();
      await new Promise(() => {});
    },
    // Echoes each message until the client half-closes, which it does not.
    async *chat(requests) {
      for await (const request of requests) {
        yield { text: request.text };
        started();
      }
    },
  },
});

const settings = (mode = "in-process") => ({ SHUTDOWN_DURATION_IN_SECONDS: "1", GATEWAY_MODE: mode });

for (const [name, transport] of [
  ["Connect", createConnectTransport],
  ["gRPC-Web", createGrpcWebTransport],
] as const) {
  test(`a ${name} server stream open at the shutdown budget ends with UNAVAILABLE`, async () => {
    const server = await startTestServer([service], settings());
    const client = createClient(FixtureService, transport({ baseUrl: server.httpUrl, httpVersion: "1.1" }));
    const giveUp = new AbortController();
    const received: number[] = [];
    const reading = (async () => {
      for await (const message of client.countdown({ from: 7 }, { signal: giveUp.signal })) received.push(message.remaining);
    })().then(
      () => "ended without an error",
      (err: unknown) => ConnectError.from(err),
    );
    await new Promise<void>((resolve) => (started = resolve));
    await server.close();
    const timer = setTimeout(() => giveUp.abort(), GIVE_UP_MS);
    const outcome = await reading;
    clearTimeout(timer);
    assert.deepEqual(received, [7]);
    assert.ok(outcome instanceof ConnectError, String(outcome));
    assert.equal(outcome.code, ConnectCode.Unavailable, outcome.message);
    assert.match(outcome.rawMessage, /shutting down/);
  });
}

test("a Connect bidi stream (HTTP/2) open at the shutdown budget ends with UNAVAILABLE", async () => {
  const server = await startTestServer([service], settings());
  const client = createClient(FixtureService, createConnectTransport({ baseUrl: server.httpUrl, httpVersion: "2" }));
  const giveUp = new AbortController();
  const first = new Promise<void>((resolve) => (started = resolve));
  async function* requests() {
    yield { text: "hi" };
    await new Promise((resolve) => giveUp.signal.addEventListener("abort", resolve)); // never half-closes
  }
  const received: string[] = [];
  const reading = (async () => {
    for await (const message of client.chat(requests(), { signal: giveUp.signal })) received.push(message.text);
  })().then(
    () => "ended without an error",
    (err: unknown) => ConnectError.from(err),
  );
  await first;
  await server.close();
  const timer = setTimeout(() => giveUp.abort(), GIVE_UP_MS);
  const outcome = await reading;
  clearTimeout(timer);
  giveUp.abort();
  assert.deepEqual(received, ["hi"]);
  assert.ok(outcome instanceof ConnectError, String(outcome));
  assert.equal(outcome.code, ConnectCode.Unavailable, outcome.message);
});

for (const mode of ["tcp", "in-process"]) {
  test(`an NDJSON bidi stream (gateway mode ${mode}) open at the shutdown budget ends with an UNAVAILABLE line`, async () => {
    const server = await startTestServer([service], settings(mode));
    const first = new Promise<void>((resolve) => (started = resolve));
    let body = "";
    let giveUp = () => {};
    const done = new Promise<string>((resolve) => {
      const req = request(
        `${server.httpUrl}/api/v1/chat`,
        { method: "POST", headers: { "content-type": "application/x-ndjson" } },
        (res) => {
          res.setEncoding("utf8");
          res.on("data", (chunk: string) => (body += chunk));
          res.on("end", () => resolve(body));
          res.on("error", () => resolve(`${body}[cut]`));
        },
      );
      req.on("error", () => resolve(`${body}[cut]`));
      giveUp = () => {
        resolve(`${body}[no end]`);
        req.destroy();
      };
      req.write('{"text":"hi"}\n'); // and no end: the client never half-closes
    });
    await first;
    await server.close();
    const timer = setTimeout(giveUp, GIVE_UP_MS);
    const text = await done;
    clearTimeout(timer);
    const lines = text.trim().split("\n");
    assert.equal(lines.length, 2, text);
    assert.equal((JSON.parse(lines[0]!) as { result: { text: string } }).result.text, "hi");
    const { error } = JSON.parse(lines[1]!) as { error: { code: number; message: string } };
    assert.equal(error.code, Code.UNAVAILABLE);
    assert.match(error.message, /shutting down/);
  });
}

/** GETs `path` and resolves with the whole body once the response ends, or what came when the client gives up. */
function openHttpStream(url: string, headers: Record<string, string>, onFirst: () => void) {
  let body = "";
  let giveUp = () => {};
  const done = new Promise<string>((resolve) => {
    const req = request(url, { headers }, (res) => {
      res.setEncoding("utf8");
      res.once("data", onFirst);
      res.on("data", (chunk: string) => (body += chunk));
      res.on("end", () => resolve(body));
      res.on("error", () => resolve(`${body}[cut]`));
    });
    req.on("error", () => resolve(`${body}[cut]`));
    giveUp = () => {
      resolve(`${body}[no end]`);
      req.destroy();
    };
    req.end();
  });
  return { done, giveUp: () => giveUp() };
}

for (const mode of ["tcp", "unix", "in-process"]) {
  for (const [form, accept] of [
    ["an NDJSON", "application/x-ndjson"],
    ["an SSE", "text/event-stream"],
  ] as const) {
    test(`${form} stream (gateway mode ${mode}) open at the shutdown budget ends with UNAVAILABLE`, async () => {
      const server = await startTestServer([service], settings(mode));
      const first = new Promise<void>((resolve) => (started = resolve));
      const stream = openHttpStream(`${server.httpUrl}/api/v1/countdown/7`, { accept }, () => {});
      await first;
      await server.close();
      const timer = setTimeout(stream.giveUp, GIVE_UP_MS);
      const body = await stream.done;
      clearTimeout(timer);
      if (accept === "application/x-ndjson") {
        const lines = body.trim().split("\n");
        assert.deepEqual(JSON.parse(lines[0]!), { result: { remaining: 7 } });
        assert.equal(lines.length, 2, body);
        const { error } = JSON.parse(lines[1]!) as { error: { code: number; message: string } };
        assert.equal(error.code, Code.UNAVAILABLE);
        assert.match(error.message, /shutting down/);
      } else {
        assert.match(body, /^data: \{"result":\{"remaining":7\}\}\n\n/, body);
        const last = /event: error\ndata: (.*)\n\n$/.exec(body);
        assert.ok(last, body);
        const { error } = JSON.parse(last[1]!) as { error: { code: number; message: string } };
        assert.equal(error.code, Code.UNAVAILABLE);
        assert.match(error.message, /shutting down/);
      }
    });
  }
}
