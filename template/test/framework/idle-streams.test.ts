/**
 * Calls that send headers and never a message hold nothing for long: 16 connections × 10,000 such calls,
 * scaled to a test's time (bench/idle-streams.ts runs it at full size), against the fixture service as a process
 * under the deployment's heap cap, with GRPC_FIRST_MESSAGE_TIMEOUT_SECONDS at 1 s. Before these limits, each
 * connection could hold 10,000 such calls for ever (~8.5 KB of heap each) and 16 connections ran the process
 * out of memory.
 */
import assert from "node:assert/strict";
import { once } from "node:events";
import { type ClientHttp2Session, connect as http2Connect } from "node:http2";
import { afterEach, test } from "node:test";
import { Code, createClient } from "../../src/framework/index.js";
import { FixtureService } from "../gen/fixture/v1/fixture_pb.js";
import { deploymentNodeOptions } from "./deploy-files.js";
import { holdHttp2, holdRaw, rssOf } from "./support/idle-streams.js";
import { handled } from "./support/metrics.js";
import { FIXTURE_MAIN, killServiceProcesses, startServiceProcess } from "./support/service-process.js";

afterEach(killServiceProcesses);

const HEAP_CAP = deploymentNodeOptions();
const RSS_LIMIT_MB = 300;

async function start(settings: Record<string, string>) {
  const service = startServiceProcess(FIXTURE_MAIN, { NODE_OPTIONS: HEAP_CAP, GRPC_FIRST_MESSAGE_TIMEOUT_SECONDS: "1", ...settings });
  const ready = (await service.waitForLog("ready", (l) => l.msg === "ready")) as { grpcPort: number; httpPort: number };
  return { service, ...ready, httpUrl: `http://127.0.0.1:${ready.httpPort}` };
}

test(
  "idle HTTP/2 streams are capped per connection and ended by GRPC_FIRST_MESSAGE_TIMEOUT_SECONDS; the process stays small and keeps answering",
  {
    timeout: 90_000,
  },
  async (t) => {
    const { service, grpcPort, httpUrl } = await start({});
    const client = createClient(FixtureService, `127.0.0.1:${grpcPort}`, { maxAttempts: 1 });
    t.after(() => client.close());
    await client.echo({ message: "before" });

    // An attacker's client sends its HEADERS whatever the stream limit; Node's client queues beyond it.
    const raw = await holdRaw(grpcPort, 4, 2000);
    const node = holdHttp2(grpcPort, 4, 300);
    t.after(() => {
      raw.close();
      node.close();
    });
    // Node's client has 100 calls open on each connection (GRPC_MAX_CONCURRENT_STREAMS), the rest waiting.
    const limits: ClientHttp2Session = http2Connect(`http://127.0.0.1:${grpcPort}`);
    t.after(() => limits.destroy());
    await once(limits, "remoteSettings");
    assert.equal(limits.remoteSettings.maxConcurrentStreams, 100);

    // While the calls are held, the service answers, over both ports.
    const started = performance.now();
    const answer = await client.echo({ message: "during" }, { deadline: Date.now() + 5000 });
    const echoMs = performance.now() - started;
    assert.equal(answer.message, "during");
    const health = await fetch(`${httpUrl}/healthcheck`, { signal: AbortSignal.timeout(5000) });
    const healthMs = performance.now() - started - echoMs;
    assert.equal(health.status, 200);

    // The raw client's streams beyond the limit are refused (and its connections ended for it); every call Node's
    // client opened, the held ones and then the queued ones, is ended by the timeout with DEADLINE_EXCEEDED.
    await raw.until((c) => c.refused > 0 && c.closed === 4);
    await node.until((c) => c.ended === 4 * 300);
    assert.deepEqual(node.counts.statuses, { [Code.DEADLINE_EXCEEDED]: 4 * 300 });
    const { peakMb } = await rssOf(service.child.pid!);
    t.diagnostic(`peak RSS ${Math.round(peakMb)} MB; while held: Echo ${Math.round(echoMs)} ms, /healthcheck ${Math.round(healthMs)} ms`);
    assert.ok(peakMb < RSS_LIMIT_MB, `peak RSS ${peakMb} MB`);
    assert.equal(service.child.exitCode, null, "the service is up");
    const logged = await service.waitForLog("the timeout's warning", (l) => /GRPC_FIRST_MESSAGE_TIMEOUT_SECONDS/.test(String(l.msg)));
    assert.equal(logged.level, "warn");
    assert.equal((await client.echo({ message: "after" })).message, "after");
  },
);

test(
  "a call of the service's own whose request never comes is ended with DEADLINE_EXCEEDED and counted",
  {
    timeout: 60_000,
  },
  async (t) => {
    const { grpcPort, httpUrl } = await start({});
    // Unary (grpc-js never runs its handler) and bidi (the handler waits on its first read).
    const unary = holdHttp2(grpcPort, 1, 1, `/${FixtureService.typeName}/Echo`);
    const bidi = holdHttp2(grpcPort, 1, 1, `/${FixtureService.typeName}/Chat`);
    t.after(() => {
      unary.close();
      bidi.close();
    });
    await unary.until((c) => c.ended === 1);
    await bidi.until((c) => c.ended === 1);
    assert.deepEqual(unary.counts.statuses, { [Code.DEADLINE_EXCEEDED]: 1 });
    assert.deepEqual(bidi.counts.statuses, { [Code.DEADLINE_EXCEEDED]: 1 });
    assert.equal(await handled({ httpUrl }, "Echo", "DeadlineExceeded"), 1);
    assert.equal(await handled({ httpUrl }, "Chat", "DeadlineExceeded"), 1);
  },
);

test(
  "a call whose first message is cut short (5 bytes of its prefix, or the prefix and half the message) and stalls is ended with DEADLINE_EXCEEDED, counted, and its stream closed",
  {
    timeout: 60_000,
  },
  async (t) => {
    const { grpcPort, httpUrl } = await start({});
    const session = http2Connect(`http://127.0.0.1:${grpcPort}`);
    session.on("error", () => {});
    t.after(() => session.destroy());
    // A message that says it is 100 KB long: its 5-byte prefix cut after 5 bytes (the whole prefix, no body), or
    // the prefix and the first half. grpc-js reads (and buffers) what comes, so the stream counts as read from.
    const length = 100_000;
    const prefix = Buffer.from([0, (length >>> 24) & 0xff, (length >>> 16) & 0xff, (length >>> 8) & 0xff, length & 0xff]);
    const half = Buffer.concat([prefix, Buffer.alloc(length / 2, 0x61)]);
    const cut = (method: string, sent: Buffer) => stalledCall(session, `/${FixtureService.typeName}/${method}`, sent);
    const outcomes = await Promise.all([cut("Echo", prefix), cut("Echo", half), cut("Sum", prefix), cut("Chat", half)]);
    assert.deepEqual(
      outcomes,
      Array.from({ length: 4 }, () => ({ grpcStatus: String(Code.DEADLINE_EXCEEDED), closed: true })),
    );
    assert.equal(await handled({ httpUrl }, "Echo", "DeadlineExceeded"), 2);
    assert.equal(await handled({ httpUrl }, "Sum", "DeadlineExceeded"), 1);
    assert.equal(await handled({ httpUrl }, "Chat", "DeadlineExceeded"), 1);
  },
);

/** A gRPC call that sends `sent` after its headers and then nothing, not even its end: the status it gets, once its stream has closed. */
async function stalledCall(session: ClientHttp2Session, path: string, sent: Buffer): Promise<{ grpcStatus: string; closed: boolean }> {
  const stream = session.request(
    { ":method": "POST", ":path": path, "content-type": "application/grpc", te: "trailers" },
    { endStream: false },
  );
  stream.on("error", () => {});
  stream.write(sent);
  let grpcStatus = "none";
  const note = (h: Record<string, unknown>) => {
    if (h["grpc-status"] !== undefined) grpcStatus = String(h["grpc-status"]);
  };
  stream.on("response", note);
  stream.on("trailers", note);
  stream.resume();
  await once(stream, "close");
  return { grpcStatus, closed: stream.closed };
}

test("the gateway's own connection to the gRPC port is not held to GRPC_MAX_CONCURRENT_STREAMS", { timeout: 60_000 }, async (t) => {
  const { httpUrl } = await start({ GATEWAY_MODE: "tcp" });
  // 150 server streams through the gateway, each sending its first message and its second 10 s later: with the
  // gateway's connection held to 100 calls, 50 of them would start only once 100 others had ended.
  const streams = 150;
  const aborts = new AbortController();
  t.after(() => aborts.abort());
  let secondSeen = false;
  const firsts = Array.from({ length: streams }, async () => {
    const res = await fetch(`${httpUrl}/api/v1/countdown/3?interval_ms=10000`, {
      headers: { accept: "application/x-ndjson" },
      signal: aborts.signal,
    });
    const reader = res.body!.getReader();
    const first = await reader.read();
    reader.read().then(
      () => (secondSeen = true),
      () => {},
    );
    return new TextDecoder().decode(first.value);
  });
  const received = await Promise.all(firsts);
  assert.equal(secondSeen, false, "every stream started before the first ones went on");
  assert.equal(received.filter((text) => text.includes('"remaining":3')).length, streams);
});

test(
  "GRPC_MAX_CONNECTIONS: a connection beyond the cap is closed at once, and one is accepted again once another closes",
  {
    timeout: 30_000,
  },
  async (t) => {
    const { service, grpcPort } = await start({ GRPC_MAX_CONNECTIONS: "3" });
    const open: ClientHttp2Session[] = [];
    t.after(() => {
      for (const s of open) s.destroy();
    });
    const connectOne = () => connectOnce(grpcPort, open);
    assert.deepEqual([await connectOne(), await connectOne(), await connectOne()], ["accepted", "accepted", "accepted"]);
    assert.equal(await connectOne(), "closed");
    await service.waitForLog("the refusal's warning", (l) => /GRPC_MAX_CONNECTIONS/.test(String(l.msg)));
    const first = open[0]!;
    first.destroy();
    await once(first, "close");
    // The server sees the close a moment after the client: the first attempts may still find the cap reached.
    let outcome: "accepted" | "closed" = "closed";
    for (let attempt = 0; attempt < 50 && outcome === "closed"; attempt++) outcome = await connectOne();
    assert.equal(outcome, "accepted");
  },
);

test(
  "by default the gRPC port accepts 200 connections (a fleet of 200 client pods, each connected to every replica) and closes the 201st",
  {
    timeout: 60_000,
  },
  async (t) => {
    const { grpcPort } = await start({});
    const open: ClientHttp2Session[] = [];
    t.after(() => {
      for (const s of open) s.destroy();
    });
    const connectOne = () => connectOnce(grpcPort, open);
    const fleet = await Promise.all(Array.from({ length: 200 }, connectOne));
    assert.equal(fleet.filter((o) => o === "accepted").length, 200);
    assert.equal(await connectOne(), "closed");
  },
);

/** One HTTP/2 connection (kept in `open`): "accepted" once the server's SETTINGS arrive, "closed" if it is closed first. */
function connectOnce(port: number, open: ClientHttp2Session[]): Promise<"accepted" | "closed"> {
  const session = http2Connect(`http://127.0.0.1:${port}`);
  session.on("error", () => {});
  open.push(session);
  // A refused connection may end with ECONNRESET, which rejects the waits.
  return Promise.race([once(session, "remoteSettings").then(() => "accepted" as const), once(session, "close")]).then(
    (outcome) => (outcome === "accepted" ? outcome : "closed"),
    () => "closed",
  );
}
