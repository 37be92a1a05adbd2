/**
 * What clients holding a connection see during the drain: HTTP/1.1 responses carry `Connection: close` from the
 * start of shutdown; gRPC connections get GOAWAY once the drain wait ends, while HTTP still finishes its calls;
 * and new connections are served until each listener closes, so a client or proxy that has not yet seen readiness
 * fail loses nothing.
 */
import assert from "node:assert/strict";
import { subscribe, unsubscribe } from "node:diagnostics_channel";
import { once } from "node:events";
import { Agent, get, type IncomingMessage, request } from "node:http";
import { connect as connectHttp2, constants } from "node:http2";
import { test } from "node:test";
import { createClient } from "../../src/framework/index.js";
import { startTestServer } from "../../src/framework/testing/harness.js";
import { FixtureService } from "../gen/fixture/v1/fixture_pb.js";
import { fixtureService } from "./fixtures/fixture-service.js";

const TIMEOUT = { timeout: 60_000 };

/** Resolves when a server of this process has parsed a request for `path` (Node's http.server.request.start channel). */
function requestArrives(path: string): Promise<void> {
  return new Promise((resolve) => {
    const onStart = (message: unknown) => {
      if ((message as { request: IncomingMessage }).request.url !== path) return;
      unsubscribe("http.server.request.start", onStart);
      resolve();
    };
    subscribe("http.server.request.start", onStart);
  });
}

/** GET over `agent`: the status, the Connection header and whether the socket was one used before. */
function getVia(url: string, agent: Agent | false): Promise<{ status: number; connection: string | undefined; reused: boolean }> {
  return new Promise((resolve, reject) => {
    const req = get(url, { agent }, (res) => {
      res.resume();
      res.on("end", () => resolve({ status: res.statusCode ?? 0, connection: res.headers.connection, reused: req.reusedSocket }));
    });
    req.on("error", reject);
  });
}

function postJson(url: string, body: unknown): Promise<number> {
  return new Promise((resolve, reject) => {
    const req = request(url, { method: "POST", agent: false, headers: { "content-type": "application/json" } }, (res) => {
      res.resume();
      res.on("end", () => resolve(res.statusCode ?? 0));
    });
    req.on("error", reject);
    req.end(JSON.stringify(body));
  });
}

test(
  "from the start of shutdown HTTP/1.1 responses carry Connection: close, and new connections are served during the drain wait",
  TIMEOUT,
  async () => {
    const server = await startTestServer([fixtureService], { GRPC_GRACEFUL_DURATION_IN_SECONDS: "2" });
    const agent = new Agent({ keepAlive: true, maxSockets: 1 });
    try {
      const before = await getVia(`${server.httpUrl}/healthcheck`, agent);
      assert.deepEqual(before, { status: 200, connection: "keep-alive", reused: false });

      const stopping = server.close();
      // The kept-alive connection: its next response says close, and the connection ends after it.
      const kept = await getVia(`${server.httpUrl}/healthcheck`, agent);
      assert.deepEqual(kept, { status: 200, connection: "close", reused: true });
      // A new connection, as from a proxy that still lists this replica: served, and closed after its response.
      const fresh = await getVia(`${server.httpUrl}/healthcheck`, false);
      assert.deepEqual(fresh, { status: 200, connection: "close", reused: false });
      await stopping;
    } finally {
      agent.destroy();
    }
  },
);

test(
  "gRPC connections get GOAWAY once the drain wait ends, while HTTP still finishes its calls; new ones are still served",
  TIMEOUT,
  async () => {
    const server = await startTestServer([fixtureService], {
      GRPC_GRACEFUL_DURATION_IN_SECONDS: "0.3",
      SHUTDOWN_DURATION_IN_SECONDS: "20",
    });
    const session = connectHttp2(`http://${server.grpcAddress}`);
    session.on("error", () => {});
    await once(session, "connect");
    const goaway = once(session, "goaway");

    // A slow REST call keeps the HTTP server closing, and so the gRPC server open, for seconds after the drain wait.
    const arrived = requestArrives("/api/v1/echo");
    let slowDone = false;
    const slow = postJson(`${server.httpUrl}/api/v1/echo`, { message: "slow", delayMs: 4000 }).finally(() => {
      slowDone = true;
    });
    await arrived;
    const stopping = server.close();

    const [code, lastStreamId, data] = (await goaway) as [number, number, Buffer];
    assert.deepEqual(
      { code, lastStreamId, data: data.toString() },
      { code: constants.NGHTTP2_NO_ERROR, lastStreamId: 2 ** 31 - 1, data: "draining" },
    );
    assert.equal(slowDone, false, "the GOAWAY came before the servers closed");

    // A client connecting now (it has not seen readiness fail) is still served.
    const late = createClient(FixtureService, server.grpcAddress, { maxAttempts: 1 });
    try {
      assert.equal((await late.echo({ message: "late" })).message, "late");
    } finally {
      late.close();
    }
    assert.equal(slowDone, false);
    assert.equal(await slow, 200, "the REST call in flight, over the gateway's own connection sent GOAWAY too, completes");
    session.destroy();
    await stopping;
  },
);
