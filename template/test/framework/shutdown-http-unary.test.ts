/**
 * A unary HTTP call still running when the shutdown budget runs out gets UNAVAILABLE in its protocol's own form
 * before the socket closes (SPEC 4.12: clients know to retry elsewhere), not a socket closed with no answer:
 * Connect's 503 `unavailable` error (fast path and Connect's own handler), gRPC-Web's grpc-status 14, REST's 503
 * with the gateway's error body and Retry-After (the gateway in each mode), a client-streaming NDJSON call alike.
 * The handlers never return. Real clients (connect-node, node:http) against a real app; streams:
 * shutdown-http-streams.test.ts.
 */
import assert from "node:assert/strict";
import { request } from "node:http";
import { test } from "node:test";
import { Code as ConnectCode, ConnectError, createClient } from "@connectrpc/connect";
import { compressionGzip, createConnectTransport, createGrpcWebTransport } from "@connectrpc/connect-node";
import { Code, defineService } from "../../src/framework/index.js";
import { startTestServer } from "../../src/framework/testing/harness.js";
import { FixtureService } from "../gen/fixture/v1/fixture_pb.js";

/** How long a client waits for its answer after the app stopped, before calling the call cut with no status. */
const GIVE_UP_MS = 3000;

let started: () => void = () => {};

const service = defineService(FixtureService, {
  handlers: {
    // Never answers, and ignores its signal: only the budget ends it.
    async echo() {
      started();
      return await new Promise<never>(() => {});
    },
    // Reads the whole request, then never answers.
    async sum(requests) {
      for await (const _ of requests);
      started();
      return await new Promise<never>(() => {});
    },
  },
});

const settings = (mode = "in-process") => ({ SHUTDOWN_DURATION_IN_SECONDS: "1", GATEWAY_MODE: mode });

for (const [name, transport, options, extra, timeoutMs] of [
  ["Connect", createConnectTransport, {}, {}, undefined],
  ["Connect (binary, HTTP/2)", createConnectTransport, { useBinaryFormat: true, httpVersion: "2" }, {}, undefined],
  ["Connect (compressed: Connect's own handler)", createConnectTransport, { sendCompression: compressionGzip }, {}, undefined],
  ["Connect (a deadline of the client's own)", createConnectTransport, {}, {}, 60_000],
  [
    "Connect (no deadline: GRPC_SERVER_DEFAULT_TIMEOUT_IN_SECONDS=0)",
    createConnectTransport,
    {},
    { GRPC_SERVER_DEFAULT_TIMEOUT_IN_SECONDS: "0" },
    undefined,
  ],
  ["gRPC-Web", createGrpcWebTransport, {}, {}, undefined],
  ["gRPC-Web (compressed: Connect's own handler)", createGrpcWebTransport, { sendCompression: compressionGzip }, {}, undefined],
] as const) {
  test(`a ${name} unary call still running at the shutdown budget ends with UNAVAILABLE`, async () => {
    const server = await startTestServer([service], { ...settings(), ...extra });
    const client = createClient(FixtureService, transport({ baseUrl: server.httpUrl, httpVersion: "1.1", ...options }));
    const giveUp = new AbortController();
    const running = new Promise<void>((resolve) => (started = resolve));
    // Over 1 KB, so that the compressing transports compress it.
    const outcome = client.echo({ message: "m".repeat(1024) }, { signal: giveUp.signal, timeoutMs }).then(
      () => "answered",
      (err: unknown) => ConnectError.from(err),
    );
    await running;
    await server.close();
    const timer = setTimeout(() => giveUp.abort(), GIVE_UP_MS);
    const error = await outcome;
    clearTimeout(timer);
    assert.ok(error instanceof ConnectError, String(error));
    assert.equal(error.code, ConnectCode.Unavailable, error.message);
    assert.match(error.rawMessage, /shutting down/);
  });
}

/** POSTs `body` and resolves with the status, Retry-After and body once the response ends, or `cut` if none came. */
function post(url: string, type: string, body: string) {
  let giveUp = () => {};
  const done = new Promise<{ status: number; retryAfter?: string | undefined; body: string } | "cut">((resolve) => {
    const req = request(url, { method: "POST", headers: { "content-type": type } }, (res) => {
      let text = "";
      res.setEncoding("utf8");
      res.on("data", (chunk: string) => (text += chunk));
      res.on("end", () => resolve({ status: res.statusCode ?? 0, retryAfter: res.headers["retry-after"], body: text }));
      res.on("error", () => resolve("cut"));
    });
    req.on("error", () => resolve("cut"));
    giveUp = () => {
      resolve("cut");
      req.destroy();
    };
    req.end(body);
  });
  return { done, giveUp: () => giveUp() };
}

for (const mode of ["tcp", "unix", "in-process"]) {
  for (const [kind, path, type, body] of [
    ["a REST unary call", "/api/v1/echo", "application/json", '{"message":"hi"}'],
    ["a client-streaming NDJSON call", "/api/v1/sum", "application/x-ndjson", '{"value":1}\n{"value":2}\n'],
  ] as const) {
    test(`${kind} (gateway mode ${mode}) still running at the shutdown budget: 503 UNAVAILABLE with Retry-After`, async () => {
      const server = await startTestServer([service], settings(mode));
      const running = new Promise<void>((resolve) => (started = resolve));
      const call = post(`${server.httpUrl}${path}`, type, body);
      await running;
      await server.close();
      const timer = setTimeout(call.giveUp, GIVE_UP_MS);
      const reply = await call.done;
      clearTimeout(timer);
      assert.notEqual(reply, "cut", "the socket closed with no answer");
      if (reply === "cut") return;
      assert.equal(reply.status, 503, reply.body);
      assert.equal(reply.retryAfter, "1");
      const error = JSON.parse(reply.body) as { code: number; message: string };
      assert.equal(error.code, Code.UNAVAILABLE);
      assert.match(error.message, /shutting down/);
    });
  }
}
