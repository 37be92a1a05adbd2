// A/B of two builds of the framework's fixture service (bench/proto.ts) beside their bare reference, for hot-path work on a busy machine:
// the servers are measured in interleaved rounds (ref, A, B, ref, B, A, …) and the medians printed, with
// the server CPU time per request, which other load on the machine moves much less than req/s.
//
//   node --import tsx bench/build.ts dist-a        # the "before" build, e.g. on the previous commit
//   node --import tsx bench/build.ts               # the "after" build, into dist-bench
//   node --import tsx bench/ab.ts <target> dist-a dist-bench [rounds=5] [seconds=5] [KEY=VALUE…]
//
// Targets, one for each throughput row of make bench and one more: in-process loads POST /api/v1/echo with wrk
// (reference: bare fastify); grpc loads Echo with h2load (reference: bare grpc-js); server, client and bidi stream Countdown,
// Sum and Chat as make bench does (bench/streams.ts; reference: bare grpc-js; "req/s" is then messages/s and CPU
// is per message); connect, grpc-web and connect-h2 are the browser rows, Echo over the HTTP port as Connect
// JSON and gRPC-Web with wrk and as Connect JSON over h2c with h2load (reference: @connectrpc/connect-node);
// connect-stream, which no make bench row has, makes Connect client-streaming Sum calls of 10 messages over h2c
// (bench/connect-streams.ts; "req/s" is calls/s);
// startup starts each build `rounds` times in turn: spawn → first 200 from
// /readycheck, the CPU time the process used to get there, and its RSS 2 s later. KEY=VALUE pairs go to
// both builds' environment.
// For grpc, two settings of ab.ts itself (its own environment): REF=loader takes the grpc-js + proto-loader
// server (bench/servers/grpc-js-proto-loader.ts, the reference make bench holds the line against) as the
// reference instead of bare grpc-js with protobuf-es; SHAPE=4x32 loads with h2load -c4 -m32 instead of -c16 -m8
// (connect-h2 too);
// FRESH=1 starts the two builds anew each round (see restartBuilds); each build's rounds are then also told apart
// by its process's GC state (see PROMOTING_MAJOR_GCS_PER_S).
import { readFileSync } from "node:fs";
import path from "node:path";
import { checkConnectStream, connectStreamLoad } from "./connect-streams.js";
import {
  CONNECT_JSON_REQUEST,
  checkConnectH2,
  checkGrpc,
  checkGrpcWeb,
  checkHttp,
  cleanup,
  type CpuSplit,
  cpuTime,
  ECHO_PATH,
  exited,
  freePort,
  GRPC_WEB_BODY,
  H2_SHAPES,
  HTTP_BODY,
  type H2Shape,
  h2load,
  launch,
  loadavg,
  MESSAGE,
  machine,
  median,
  pin,
  type Run,
  type Server,
  sleep,
  startBench,
  startService,
  stop,
  timeout,
  WARMUP,
  waitReady,
  wrk,
} from "./lib.js";
import { closeStreamClients, type StreamKind, streamLoad } from "./streams.js";

const [target = "", distA = "", distB = "", roundsArg, secondsArg, ...pairs] = process.argv.slice(2);
const streams: readonly string[] = ["server", "client", "bidi"] satisfies StreamKind[];
const targets = ["in-process", "grpc", ...streams, "connect", "grpc-web", "connect-h2", "connect-stream", "startup"];
if (!targets.includes(target) || !distA || !distB) {
  throw new Error(`usage: ab.ts ${targets.join("|")} <dist A> <dist B> [rounds] [seconds] [KEY=VALUE…]`);
}
const rounds = Number(roundsArg ?? 5);
const seconds = Number(secondsArg ?? 5);
const env = Object.fromEntries(pairs.map((p) => [p.slice(0, p.indexOf("=")), p.slice(p.indexOf("=") + 1)]));
const loaderRef = process.env.REF === "loader";
const fresh = process.env.FRESH === "1";
if (process.env.REF !== undefined && !loaderRef) throw new Error(`REF=${process.env.REF}: only REF=loader is known`);
const shape: H2Shape | undefined = process.env.SHAPE
  ? H2_SHAPES.find((s) => `${s.clients}x${s.streams}` === process.env.SHAPE)
  : H2_SHAPES[0];
if (!shape) throw new Error(`SHAPE=${process.env.SHAPE}: one of ${H2_SHAPES.map((s) => `${s.clients}x${s.streams}`).join(", ")}`);

/**
 * FRESH=1: the two builds' servers are new processes each round (warmed up again). One process's speed can sit
 * ~10 % apart from the next one's of the same build for its whole life (a CPU profile then shows process.nextTick
 * ten times as costly, in either build), which a comparison of one process each takes for the builds' difference.
 * They are started and warmed up in the order the round then measures them (A first in even rounds, B first in
 * odd ones): started always A first, one build against a copy of itself came out 0.89× (B ÷ A, paired, 12
 * rounds, B slower in 11); started in turn, 0.95× (the one started second slower in 8 of 12). Even so, a run
 * here resolves some ±5 %, not less: read a few per cent by instructions (instructions.ts).
 */
async function restartBuilds(
  servers: Server[],
  order: readonly number[],
  start: (dist: string) => Promise<Server>,
  check: (s: Server) => Promise<void>,
  load: (s: Server, seconds: number) => Promise<Run>,
): Promise<void> {
  for (const i of order) {
    await stop(servers[i]!.child);
    servers[i] = await start(i === 1 ? distA : distB);
    await check(servers[i]!);
  }
  for (const i of order) await load(servers[i]!, WARMUP);
}

/**
 * Old-generation collections a second above which a round counts as in the promoting GC state: a node:http2
 * server lands in one of two for its whole life, with ~0 mark-compacts under load or with 2 or more a second and
 * 10–20 % more CPU a call (Node's per-session Map of streams promotes each stream once its table is old), so
 * the two builds are compared within a state, not across.
 */
const PROMOTING_MAJOR_GCS_PER_S = 0.5;
type GcState = "low" | "promoting";

/** A round's GC state from its process's old-generation GC count before and after it; unknown without /metrics. */
function gcState(before: number | undefined, after: number | undefined): GcState | undefined {
  if (before === undefined || after === undefined) return undefined;
  return (after - before) / seconds >= PROMOTING_MAJOR_GCS_PER_S ? "promoting" : "low";
}

/** One start of a build: wall ms to ready, CPU ms used by then, RSS in MB 2 s later. */
async function startOnce(dist: string): Promise<[number, number, number]> {
  const [grpcPort, httpPort] = [await freePort(), await freePort()];
  const t0 = performance.now();
  const { child, log } = launch(
    dist,
    [path.join(dist, "main.js")],
    { GRPC_PORT: String(grpcPort), HTTP_PORT: String(httpPort), ...env },
    false,
  );
  await Promise.race([waitReady(httpPort), exited(child, log), timeout(30_000, `${dist} did not get ready`)]);
  const wall = performance.now() - t0;
  const cpu = cpuTime(child.pid) / 1000;
  await sleep(2000);
  const rss = Number(/VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${child.pid}/status`, "utf8"))?.[1]) / 1024;
  await stop(child);
  return [wall, cpu, rss];
}

async function startup(): Promise<void> {
  const results = new Map<string, [number, number, number][]>([distA, distB].map((d) => [d, []]));
  for (let r = 0; r < rounds; r++) {
    for (const dist of [distA, distB]) {
      const one = await startOnce(dist);
      results.get(dist)!.push(one);
      process.stderr.write(`  ${dist}: ${one.map((x) => x.toFixed(1)).join(" ")} (${loadavg()})\n`);
    }
  }
  process.stdout.write(`\nstart-up, median of ${rounds} alternated starts; ${loadavg()} at the end\n`);
  for (const [dist, rs] of results) {
    const [wall, cpu, rss] = [0, 1, 2].map((i) => median(rs.map((x) => x[i]!)));
    process.stdout.write(
      `  ${dist.padEnd(14)} ${wall!.toFixed(0).padStart(5)} ms to ready  ${cpu!.toFixed(0).padStart(5)} ms CPU  ${rss!.toFixed(1)} MB RSS\n`,
    );
  }
}

/** What a target loads, against which reference, and how a server is checked before it is loaded. */
interface Target {
  ref: () => Promise<Server>;
  /** Environment for the two builds besides the KEY=VALUE pairs. */
  extra: Record<string, string>;
  /** Loaded on the gRPC port; otherwise the HTTP port. */
  onGrpcPort: boolean;
  load: (s: Server, seconds: number) => Promise<Run>;
  check: (s: Server) => Promise<void>;
}

/**
 * in-process is the REST row (the gateway in process, as make bench's); the browser rows (connect, grpc-web,
 * connect-h2) run the builds as make bench does, gateway and all, against @connectrpc/connect-node.
 */
function setup(target: string): Target {
  if (streams.includes(target)) {
    const stream = streamLoad(target as StreamKind);
    return { ref: bareGrpc, extra: env, onGrpcPort: true, load: stream, check: checkGrpc };
  }
  const connectNode = (mode: "json" | "grpc") => () => startBench(`connect-node (${mode})`, "connect.ts", mode);
  const overHttp = { extra: env, onGrpcPort: false };
  switch (target) {
    case "grpc":
      return { ref: bareGrpc, extra: env, onGrpcPort: true, load: (s, t) => h2load(s, t, shape), check: checkGrpc };
    case "in-process":
      return {
        ref: () => startBench("bare fastify", "fastify.ts"),
        extra: { GATEWAY_MODE: "in-process", ...env },
        onGrpcPort: false,
        load: (s, t) => wrk(s, "/api/v1/echo", t),
        check: (s) => checkHttp(s, "/api/v1/echo"),
      };
    case "connect":
      return { ...overHttp, ref: connectNode("json"), load: (s, t) => wrk(s, ECHO_PATH, t), check: (s) => checkHttp(s, ECHO_PATH) };
    case "grpc-web":
      return { ...overHttp, ref: connectNode("json"), load: (s, t) => wrk(s, ECHO_PATH, t, GRPC_WEB_BODY), check: checkGrpcWeb };
    case "connect-h2":
      return {
        ...overHttp,
        ref: connectNode("grpc"),
        load: (s, t) => h2load(s, t, shape, CONNECT_JSON_REQUEST),
        check: checkConnectH2,
      };
    case "connect-stream":
      return { ...overHttp, ref: connectNode("grpc"), load: connectStreamLoad, check: checkConnectStream };
    default:
      throw new Error(`unknown target ${target}`);
  }
}

function bareGrpc(): Promise<Server> {
  return loaderRef ? startBench("proto-loader", "grpc-js-proto-loader.ts") : startBench("bare grpc-js", "grpc-js.ts");
}

try {
  process.stderr.write(`${machine(pin()).join("\n")}\n`);
  if (target === "startup") {
    await startup();
    await cleanup();
    process.exit();
  }
  const { ref, extra, onGrpcPort, load, check } = setup(target);
  const start = async (dist: string) => {
    const s = await startService(dist, extra, path.join(dist, "main.js"));
    return onGrpcPort ? s : { ...s, port: s.httpPort };
  };
  const servers: Server[] = [await ref(), await start(distA), await start(distB)];
  for (const s of servers) await check(s);
  for (const s of servers) await load(s, WARMUP);
  // Keyed by position: with FRESH each round's servers are new processes.
  const runs: Run[][] = servers.map(() => []);
  const states: (GcState | undefined)[][] = servers.map(() => []);
  for (let r = 0; r < rounds; r++) {
    // A before B in one round, B before A in the next: whatever the place in a round does to a server (the one
    // just loaded still collecting its garbage, say) falls on both builds alike.
    const order = r % 2 === 0 ? [1, 2] : [2, 1];
    if (fresh && r > 0) await restartBuilds(servers, order, start, check, load);
    const line: string[] = [];
    for (const i of [0, ...order]) {
      const s = servers[i]!;
      const gcsBefore = await s.majorGcs?.();
      const run = await load(s, seconds);
      const gcsAfter = await s.majorGcs?.();
      const state = gcState(gcsBefore, gcsAfter);
      runs[i]!.push(run);
      states[i]!.push(state);
      line[i] =
        `${s.name} ${Math.round(run.rps)} req/s ${Math.round(run.cpuUs)} µs${state ? ` ${state}` : ""}${run.errors ? ` ${run.errors} errors` : ""}`;
    }
    process.stderr.write(`  round ${r + 1}: ${line.join(" | ")} (${loadavg()})\n`);
  }
  const refRps = median(runs[0]!.map((r) => r.rps));
  const refCpu = median(runs[0]!.map((r) => r.cpuUs));
  const refLeast = Math.min(...runs[0]!.map((r) => r.cpuUs));
  const shapeNote = target === "grpc" || target === "connect-h2" ? ` (h2load -c${shape.clients} -m${shape.streams})` : "";
  process.stdout.write(`\n${target}${shapeNote}, median of ${rounds} interleaved rounds of ${seconds} s; ${loadavg()} at the end\n`);
  for (const [i, s] of servers.entries()) {
    const rs = runs[i]!;
    const rps = median(rs.map((r) => r.rps));
    const cpu = median(rs.map((r) => r.cpuUs));
    const errors = rs.reduce((a, r) => a + r.errors, 0);
    // The least CPU a round took too: other load on the machine only ever adds to it, so on a noisy machine the
    // minimum moves less than the median.
    const least = Math.min(...rs.map((r) => r.cpuUs));
    const ratios =
      i === 0
        ? ""
        : `  ${(rps / refRps).toFixed(2)}× req/s  ${(refCpu / cpu).toFixed(2)}× by CPU  ${(refLeast / least).toFixed(2)}× by least CPU`;
    process.stdout.write(
      `  ${s.name.padEnd(14)} ${String(Math.round(rps)).padStart(7)} req/s ${cpu.toFixed(1).padStart(7)} µs CPU/req (least ${least.toFixed(1)})  ${errors} errors${ratios}\n`,
    );
  }
  // Where the CPU went (h2load targets): in the main thread's own work or the kernel's for it (system time), in
  // the other threads (GC helpers), or with waits (switches); callgrind sees neither kernel time nor waits.
  if (runs.every((rs) => rs.every((r) => r.split))) {
    for (const [i, s] of servers.entries()) {
      const at = (k: keyof CpuSplit) => median(runs[i]!.map((r) => r.split![k]));
      process.stdout.write(
        `  ${s.name.padEnd(14)} main thread ${at("mainUserUs").toFixed(1)} µs user + ${at("mainSystemUs").toFixed(1)} µs system, other threads ${at("otherThreadsUs").toFixed(1)} µs; ${(at("voluntarySwitches") * 1000).toFixed(1)} + ${(at("involuntarySwitches") * 1000).toFixed(1)} switches/1000 req\n`,
      );
    }
    const diff = (k: keyof CpuSplit) => median(runs[1]!.map((r, n) => runs[2]![n]!.split![k] - r.split![k]));
    process.stdout.write(
      `  B − A, median of the rounds' differences: main thread ${diff("mainUserUs").toFixed(2)} µs user, ${diff("mainSystemUs").toFixed(2)} µs system; other threads ${diff("otherThreadsUs").toFixed(2)} µs; switches ${(diff("voluntarySwitches") * 1000).toFixed(1)} + ${(diff("involuntarySwitches") * 1000).toFixed(1)} /1000 req\n`,
    );
  }
  // Each round's A and B ran a few seconds apart, so their ratio leaves out what moved the whole machine between rounds.
  const [a, b] = [runs[1]!, runs[2]!];
  const paired = median(a.map((r, k) => r.cpuUs / b[k]!.cpuUs));
  const byMedian = median(a.map((r) => r.cpuUs)) / median(b.map((r) => r.cpuUs));
  process.stdout.write(`  B ÷ A by CPU: ${byMedian.toFixed(3)}× (medians), ${paired.toFixed(3)}× (median of the rounds' ratios)\n`);
  // Within one GC state: with FRESH each round's processes may land in either, and a state moves CPU more than a
  // build does; so the rounds in which both builds were in the same one, paired.
  for (const state of ["low", "promoting"] satisfies GcState[]) {
    const same = a.flatMap((r, k) => (states[1]![k] === state && states[2]![k] === state ? [r.cpuUs / b[k]!.cpuUs] : []));
    if (same.length === 0) continue;
    process.stdout.write(
      `  B ÷ A by CPU, both in the ${state} GC state: ${median(same).toFixed(3)}× (median of ${same.length} rounds' ratios)\n`,
    );
  }
} finally {
  closeStreamClients();
  await cleanup();
}
process.exit();
