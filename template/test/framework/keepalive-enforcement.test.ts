/**
 * Keepalive enforcement, as grpc-go's: a client pinging faster than GRPC_SERVER_KEEPALIVE_MIN_TIME_SECONDS with
 * nothing sent back in between is sent GOAWAY ENHANCE_YOUR_CALM "too_many_pings" at its third strike (anyone can
 * open a connection and ping: this bounds what that costs); pings answered by responses, or slower ones, are fine.
 * Raw HTTP/2 clients, so that the pings are exactly the test's.
 */
import assert from "node:assert/strict";
import { once } from "node:events";
import { type ClientHttp2Session, connect, constants } from "node:http2";
import { afterEach, test } from "node:test";
import { setTimeout as pause } from "node:timers/promises";
import { create, toBinary } from "@bufbuild/protobuf";
import { startTestServer, type TestServer } from "../../src/framework/testing/harness.js";
import { CountdownRequestSchema } from "../gen/fixture/v1/fixture_pb.js";
import { fixtureService } from "./fixtures/fixture-service.js";

const TEST_TIMEOUT_MS = 60_000;
const servers: TestServer[] = [];
const sessions: ClientHttp2Session[] = [];
afterEach(async () => {
  for (const s of sessions.splice(0)) s.destroy();
  await Promise.all(servers.splice(0).map((s) => s.close()));
});

async function open(env: Record<string, string>) {
  const server = await startTestServer([fixtureService], env);
  servers.push(server);
  const session = connect(`http://${server.grpcAddress}`);
  sessions.push(session);
  session.on("error", () => {});
  let goaway: { code: number; data: string } | undefined;
  const goneAway = once(session, "goaway").then((args) => {
    const [code, , data] = args as [number, number, Buffer | undefined];
    goaway = { code, data: data?.toString() ?? "" };
    return goaway;
  });
  await once(session, "connect");
  return { session, goneAway, goaway: () => goaway };
}

const ping = (session: ClientHttp2Session) => new Promise<void>((resolve) => session.ping(() => resolve()));

const TOO_MANY_PINGS = { code: constants.NGHTTP2_ENHANCE_YOUR_CALM, data: "too_many_pings" };

/** Countdown over gRPC: `from` messages, `intervalMs` apart; `onMessage` runs as each arrives. */
function countdown(session: ClientHttp2Session, from: number, intervalMs: number, onMessage: () => void = () => {}) {
  const payload = toBinary(CountdownRequestSchema, create(CountdownRequestSchema, { from, intervalMs }));
  const frame = Buffer.alloc(5 + payload.length);
  frame.writeUInt32BE(payload.length, 1);
  frame.set(payload, 5);
  const stream = session.request({
    ":method": "POST",
    ":path": "/fixture.v1.FixtureService/Countdown",
    "content-type": "application/grpc",
    te: "trailers",
  });
  stream.on("data", onMessage);
  stream.on("error", () => {});
  stream.end(frame);
  return new Promise<string | undefined>((resolve) => {
    let status: string | undefined;
    stream.on("trailers", (t) => (status = String(t["grpc-status"])));
    stream.on("close", () => resolve(status));
  });
}

test("a client pinging without pause is sent GOAWAY too_many_pings at its third strike", { timeout: TEST_TIMEOUT_MS }, async () => {
  const { session, goneAway, goaway } = await open({ GRPC_SERVER_KEEPALIVE_MIN_TIME_SECONDS: "1" });
  // The first pings may be forgiven: the server's first frames (its settings' acknowledgement) go out between them.
  for (let i = 0; i < 10 && !goaway(); i++) await ping(session);
  assert.deepEqual(await goneAway, TOO_MANY_PINGS);
});

test("pings sent in bursts, answered together, are still counted one by one", { timeout: TEST_TIMEOUT_MS }, async () => {
  const { session, goneAway } = await open({ GRPC_SERVER_KEEPALIVE_MIN_TIME_SECONDS: "1" });
  await Promise.all([ping(session), ping(session), ping(session), ping(session), ping(session)]);
  assert.deepEqual(await goneAway, TOO_MANY_PINGS);
});

test("pings no closer than the minimum time are allowed", { timeout: TEST_TIMEOUT_MS }, async () => {
  const { session, goaway } = await open({ GRPC_SERVER_KEEPALIVE_MIN_TIME_SECONDS: "0.05" });
  for (let i = 0; i < 6; i++) {
    await ping(session);
    await pause(100); // twice the minimum: a loaded machine only makes it longer
  }
  assert.equal(await countdown(session, 1, 0), "0");
  assert.equal(goaway(), undefined);
});

test("pings between responses are forgiven however often they come", { timeout: TEST_TIMEOUT_MS }, async () => {
  const { session, goaway } = await open({ GRPC_SERVER_KEEPALIVE_MIN_TIME_SECONDS: "60" });
  // A ping after each message the server sends: a response always went out since the previous ping.
  const status = await countdown(session, 20, 10, () => session.ping(() => {}));
  assert.equal(status, "0");
  assert.equal(goaway(), undefined);
});

test(
  "with pings without calls refused, pings on an idle connection are strikes but pings during a call are not",
  {
    timeout: TEST_TIMEOUT_MS,
  },
  async () => {
    const env = { GRPC_SERVER_KEEPALIVE_MIN_TIME_SECONDS: "0.05", GRPC_SERVER_KEEPALIVE_PERMIT_WITHOUT_CALLS: "false" };
    const busy = await open(env);
    const call = countdown(busy.session, 2, 1000);
    for (let i = 0; i < 5; i++) {
      await ping(busy.session);
      await pause(100);
    }
    assert.equal(await call, "0");
    assert.equal(busy.goaway(), undefined);

    const idle = await open(env);
    for (let i = 0; i < 10 && !idle.goaway(); i++) {
      await ping(idle.session);
      await pause(100);
    }
    assert.deepEqual(await idle.goneAway, TOO_MANY_PINGS);
  },
);

test("with the minimum time 0 and pings without calls permitted, any ping rate is allowed", { timeout: TEST_TIMEOUT_MS }, async () => {
  const { session, goaway } = await open({ GRPC_SERVER_KEEPALIVE_MIN_TIME_SECONDS: "0" });
  for (let i = 0; i < 8; i++) await ping(session);
  assert.equal(await countdown(session, 1, 0), "0");
  assert.equal(goaway(), undefined);
});
