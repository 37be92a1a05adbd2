/**
 * Rebalancing: a gRPC connection is sent GOAWAY at its maximum age (and when idle), calls in flight finish
 * within the grace, and clients reconnect for their next call: how a replica added by scale-out gets calls
 * from clients already connected elsewhere. Real servers and clients; a TCP relay in front of the server
 * counts the client's connections.
 */
import assert from "node:assert/strict";
import { once } from "node:events";
import { connect as connectHttp2, constants } from "node:http2";
import { connect as connectTcp, createServer, type Server, type Socket } from "node:net";
import { afterEach, test } from "node:test";
import { create, toBinary } from "@bufbuild/protobuf";
import { credentials, Client as GrpcClient } from "@grpc/grpc-js";
import { Code, createClient } from "../../src/framework/index.js";
import { startTestServer, type TestServer } from "../../src/framework/testing/harness.js";
import { statusOf } from "../../src/framework/testing/status.js";
import { type EchoRequest, EchoRequestSchema, FixtureService } from "../gen/fixture/v1/fixture_pb.js";
import { fixtureService } from "./fixtures/fixture-service.js";
import { FRAME, frame, PREFACE, readFrames } from "./support/idle-streams.js";

/** Long enough for a stuck wait to fail the test rather than hang the suite. */
const TEST_TIMEOUT_MS = 60_000;

const servers: TestServer[] = [];
const relays: Server[] = [];
afterEach(async () => {
  for (const relay of relays.splice(0)) relay.close();
  await Promise.all(servers.splice(0).map((s) => s.close()));
});

async function start(env: Record<string, string>): Promise<TestServer> {
  const server = await startTestServer([fixtureService], env);
  servers.push(server);
  return server;
}

interface Relay {
  address: string;
  /** Each connection the relay took, in order, with a promise settled when it closes. */
  connections: { closed: Promise<void> }[];
}

/** A TCP relay to `target`: it sees every connection a client opens and when each one ends. */
async function relayTo(target: string): Promise<Relay> {
  const [host, port] = [target.slice(0, target.lastIndexOf(":")), Number(target.slice(target.lastIndexOf(":") + 1))];
  const connections: Relay["connections"] = [];
  const relay = createServer((inbound: Socket) => {
    const outbound = connectTcp(port, host);
    const cut = () => {
      inbound.destroy();
      outbound.destroy();
    };
    // By hand rather than pipe(): a pipe writing to a socket its peer has just ended fails the test (EPIPE).
    for (const [from, to] of [
      [inbound, outbound],
      [outbound, inbound],
    ] as const) {
      from.on("data", (chunk: Buffer) => {
        if (!to.writableEnded && !to.destroyed) to.write(chunk);
      });
      from
        .on("end", () => to.end())
        .on("error", cut)
        .on("close", cut);
    }
    connections.push({ closed: once(inbound, "close").then(() => {}) });
  });
  relays.push(relay);
  relay.listen(0, "127.0.0.1");
  await once(relay, "listening");
  const address = relay.address();
  assert.ok(address && typeof address === "object");
  return { address: `127.0.0.1:${address.port}`, connections };
}

/** Resolves to the first GOAWAY a plain HTTP/2 connection receives: its code and debug data. */
async function firstGoaway(address: string, open?: (session: ReturnType<typeof connectHttp2>) => void) {
  const session = connectHttp2(`http://${address}`);
  session.on("error", () => {});
  open?.(session);
  const [code, lastStreamId, data] = (await once(session, "goaway")) as [number, number, Buffer | undefined];
  session.destroy();
  return { code, lastStreamId, data: data?.toString() ?? "" };
}

test(
  "a connection at its maximum age is sent GOAWAY and the client's next call goes over a new connection",
  {
    timeout: TEST_TIMEOUT_MS,
  },
  async () => {
    const server = await start({ GRPC_SERVER_MAX_CONNECTION_AGE_SECONDS: "0.3", GRPC_SERVER_MAX_CONNECTION_AGE_GRACE_SECONDS: "5" });
    // The first GOAWAY refuses no stream (the highest ID): calls the client sent before reading it are served.
    assert.deepEqual(await firstGoaway(server.grpcAddress), {
      code: constants.NGHTTP2_NO_ERROR,
      lastStreamId: 2 ** 31 - 1,
      data: "max_age",
    });

    const relay = await relayTo(server.grpcAddress);
    const client = createClient(FixtureService, relay.address, { maxAttempts: 1 });
    try {
      assert.equal((await client.echo({ message: "first" })).message, "first");
      assert.equal(relay.connections.length, 1);
      // No call in flight: the server closes the connection right after its GOAWAY.
      await relay.connections[0]!.closed;
      assert.equal((await client.echo({ message: "second" })).message, "second");
      assert.ok(relay.connections.length >= 2, "the second call went over a new connection");
    } finally {
      client.close();
    }
  },
);

test(
  "a call still running when its connection reaches the maximum age finishes within the grace",
  {
    timeout: TEST_TIMEOUT_MS,
  },
  async () => {
    const server = await start({ GRPC_SERVER_MAX_CONNECTION_AGE_SECONDS: "0.3", GRPC_SERVER_MAX_CONNECTION_AGE_GRACE_SECONDS: "10" });
    const relay = await relayTo(server.grpcAddress);
    const client = createClient(FixtureService, relay.address, { maxAttempts: 1 });
    try {
      // Five times the age, well inside the grace.
      const response = await client.echo({ message: "slow", delayMs: 1500 });
      assert.equal(response.message, "slow");
      // The connection was sent GOAWAY while the call ran, and closes now that it is over.
      await relay.connections[0]!.closed;
      assert.equal((await client.echo({ message: "after" })).message, "after");
      // grpc-js reconnects as soon as it reads the GOAWAY (its channel has a call): the new connections age too.
      assert.ok(relay.connections.length >= 2);
    } finally {
      client.close();
    }
  },
);

test("a call still running at the maximum age plus the grace is cut", { timeout: TEST_TIMEOUT_MS }, async () => {
  const server = await start({ GRPC_SERVER_MAX_CONNECTION_AGE_SECONDS: "0.2", GRPC_SERVER_MAX_CONNECTION_AGE_GRACE_SECONDS: "0.3" });
  const client = server.client(FixtureService);
  const { code } = await statusOf(client.echo({ message: "too slow", delayMs: 10_000 }));
  assert.equal(code, Code.UNAVAILABLE);
});

test(
  "a connection without a call for the idle time is sent GOAWAY; one with a call in flight is not",
  {
    timeout: TEST_TIMEOUT_MS,
  },
  async () => {
    const server = await start({ GRPC_SERVER_MAX_CONNECTION_IDLE_SECONDS: "0.3" });
    // grpc-go's two-step GOAWAY, as at the maximum age: a call the client sends meanwhile is not refused.
    assert.deepEqual(await firstGoaway(server.grpcAddress), {
      code: constants.NGHTTP2_NO_ERROR,
      lastStreamId: 2 ** 31 - 1,
      data: "max_idle",
    });

    const relay = await relayTo(server.grpcAddress);
    const client = createClient(FixtureService, relay.address, { maxAttempts: 1 });
    try {
      // Busy for five idle times: the connection stays; idle after it, it closes.
      assert.equal((await client.echo({ message: "busy", delayMs: 1500 })).message, "busy");
      assert.equal(relay.connections.length, 1);
      await relay.connections[0]!.closed;
    } finally {
      client.close();
    }
  },
);

test(
  "a client that only pings and ignores the GOAWAY is idle all the same: its connection is closed",
  { timeout: TEST_TIMEOUT_MS },
  async () => {
    // The ping policy off, so that only the idle check can end the connection.
    const server = await start({ GRPC_SERVER_MAX_CONNECTION_IDLE_SECONDS: "0.3", GRPC_SERVER_KEEPALIVE_MIN_TIME_SECONDS: "0" });
    // Raw frames: a Node client would close by itself on the GOAWAY.
    const socket = connectTcp(Number(server.grpcAddress.slice(server.grpcAddress.lastIndexOf(":") + 1)), "127.0.0.1");
    socket.on("error", () => {});
    socket.write(Buffer.concat([PREFACE, frame(FRAME.SETTINGS, 0, 0, Buffer.alloc(0))]));
    const pinging = setInterval(() => socket.writable && socket.write(frame(FRAME.PING, 0, 0, Buffer.alloc(8))), 20);
    const goaways: string[] = [];
    // GOAWAY: last stream ID, error code, then the debug data.
    readFrames(socket, ({ type, payload }) => type === FRAME.GOAWAY && goaways.push(payload.subarray(8).toString()));
    try {
      await once(socket, "close");
      assert.ok(goaways.includes("max_idle"), `GOAWAYs received: ${JSON.stringify(goaways)}`);
    } finally {
      clearInterval(pinging);
      socket.destroy();
    }
  },
);

test("with the maximum age and idle time off, a connection is never sent GOAWAY", { timeout: TEST_TIMEOUT_MS }, async () => {
  const server = await start({ GRPC_SERVER_MAX_CONNECTION_AGE_SECONDS: "0", GRPC_SERVER_MAX_CONNECTION_IDLE_SECONDS: "0" });
  const relay = await relayTo(server.grpcAddress);
  const client = createClient(FixtureService, relay.address, { maxAttempts: 1 });
  try {
    await client.echo({ message: "one", delayMs: 700 });
    await client.echo({ message: "two", delayMs: 700 });
    assert.equal(relay.connections.length, 1);
  } finally {
    client.close();
  }
});

test(
  "calls a grpc-js client sends without pause while its connections reach their age all succeed",
  {
    timeout: TEST_TIMEOUT_MS,
  },
  async () => {
    const server = await start({ GRPC_SERVER_MAX_CONNECTION_AGE_SECONDS: "0.3", GRPC_SERVER_MAX_CONNECTION_AGE_GRACE_SECONDS: "5" });
    const relay = await relayTo(server.grpcAddress);
    // grpc-js as a team's client has it: default options. A Node client fails the calls it had queued but not yet
    // sent when it reads a GOAWAY, as refused; grpc-js resends those by itself (its transparent retry).
    const client = new GrpcClient(relay.address, credentials.createInsecure());
    const echo = (message: string) =>
      new Promise<void>((resolve, reject) =>
        client.makeUnaryRequest(
          "/fixture.v1.FixtureService/Echo",
          (m: EchoRequest) => Buffer.from(toBinary(EchoRequestSchema, m)),
          (b: Buffer) => b,
          create(EchoRequestSchema, { message }),
          (err) => (err ? reject(err) : resolve()),
        ),
      );
    const CALLS = 1000;
    const CONCURRENCY = 8;
    let next = 0;
    const failures: unknown[] = [];
    try {
      await Promise.all(
        Array.from({ length: CONCURRENCY }, async () => {
          while (next < CALLS) {
            next++;
            await echo("x").catch((err: unknown) => failures.push(err));
          }
        }),
      );
    } finally {
      client.close();
    }
    assert.deepEqual(failures, []);
    assert.ok(relay.connections.length > 1, `the calls were spread over ${relay.connections.length} connection(s)`);
  },
);
