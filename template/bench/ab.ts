// A/B of two builds of the framework's fixture service (bench/proto.ts) beside their bare reference, for hot-path work on a busy machine:
// the servers are measured in interleaved rounds (ref, A, B, ref, A, B, …) and the medians printed, with
// the server CPU time per request, which other load on the machine moves much less than req/s.
//
//   node --import tsx bench/build.ts dist-a        # the "before" build, e.g. on the previous commit
//   node --import tsx bench/build.ts               # the "after" build, into dist-bench
//   node --import tsx bench/ab.ts in-process|grpc|server|client|bidi|startup dist-a dist-bench [rounds=5] [seconds=5] [KEY=VALUE…]
//
// in-process loads POST /api/v1/echo with wrk (reference: bare fastify); grpc loads Echo with h2load
// (reference: bare grpc-js); server, client and bidi stream Countdown, Sum and Chat as make bench does
// (bench/streams.ts; reference: bare grpc-js; "req/s" is then messages/s and CPU is per message); startup starts each build `rounds` times in turn: spawn → first 200 from
// /readycheck, the CPU time the process used to get there, and its RSS 2 s later. KEY=VALUE pairs go to
// both builds' environment.
// For grpc, two settings of ab.ts itself (its own environment): REF=loader takes the grpc-js + proto-loader
// server (bench/servers/grpc-js-proto-loader.ts, the reference make bench holds the line against) as the
// reference instead of bare grpc-js with protobuf-es; SHAPE=4x32 loads with h2load -c4 -m32 instead of -c16 -m8;
// FRESH=1 starts the two builds anew each round (see restartBuilds).
import { readFileSync } from "node:fs";
import path from "node:path";
import {
  checkGrpc,
  checkHttp,
  cleanup,
  cpuTime,
  exited,
  freePort,
  H2_SHAPES,
  type H2Shape,
  h2load,
  launch,
  loadavg,
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
if (!["in-process", "grpc", ...streams, "startup"].includes(target) || !distA || !distB) {
  throw new Error("usage: ab.ts in-process|grpc|server|client|bidi|startup <dist A> <dist B> [rounds] [seconds] [KEY=VALUE…]");
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
 */
async function restartBuilds(
  servers: Server[],
  start: (dist: string) => Promise<Server>,
  check: (s: Server) => Promise<void>,
  load: (s: Server, seconds: number) => Promise<Run>,
): Promise<void> {
  for (const i of [1, 2]) {
    await stop(servers[i]!.child);
    servers[i] = await start(i === 1 ? distA : distB);
    await check(servers[i]!);
  }
  for (const i of [1, 2]) await load(servers[i]!, WARMUP);
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

try {
  process.stderr.write(`${machine(pin()).join("\n")}\n`);
  if (target === "startup") {
    await startup();
    await cleanup();
    process.exit();
  }
  const stream = streams.includes(target) ? streamLoad(target as StreamKind) : undefined;
  const grpc = target === "grpc" || stream !== undefined;
  const extra = grpc ? env : { GATEWAY_MODE: "in-process", ...env };
  const ref = !grpc
    ? await startBench("bare fastify", "fastify.ts")
    : loaderRef
      ? await startBench("proto-loader", "grpc-js-proto-loader.ts")
      : await startBench("bare grpc-js", "grpc-js.ts");
  const start = async (dist: string) => {
    const s = await startService(dist, extra, path.join(dist, "main.js"));
    return grpc ? s : { ...s, port: s.httpPort };
  };
  const servers: Server[] = [ref, await start(distA), await start(distB)];
  const load = (s: Server, t: number): Promise<Run> => (stream ? stream(s, t) : grpc ? h2load(s, t, shape) : wrk(s, "/api/v1/echo", t));
  const check = (s: Server): Promise<void> => (grpc ? checkGrpc(s) : checkHttp(s, "/api/v1/echo"));
  for (const s of servers) await check(s);
  for (const s of servers) await load(s, WARMUP);
  // Keyed by position: with FRESH each round's servers are new processes.
  const runs: Run[][] = servers.map(() => []);
  for (let r = 0; r < rounds; r++) {
    if (fresh && r > 0) await restartBuilds(servers, start, check, load);
    const line: string[] = [];
    for (const [i, s] of servers.entries()) {
      const run = await load(s, seconds);
      runs[i]!.push(run);
      line.push(`${s.name} ${Math.round(run.rps)} req/s ${Math.round(run.cpuUs)} µs${run.errors ? ` ${run.errors} errors` : ""}`);
    }
    process.stderr.write(`  round ${r + 1}: ${line.join(" | ")} (${loadavg()})\n`);
  }
  const refRps = median(runs[0]!.map((r) => r.rps));
  const refCpu = median(runs[0]!.map((r) => r.cpuUs));
  const refLeast = Math.min(...runs[0]!.map((r) => r.cpuUs));
  const shapeNote = target === "grpc" ? ` (h2load -c${shape.clients} -m${shape.streams})` : "";
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
      s === ref
        ? ""
        : `  ${(rps / refRps).toFixed(2)}× req/s  ${(refCpu / cpu).toFixed(2)}× by CPU  ${(refLeast / least).toFixed(2)}× by least CPU`;
    process.stdout.write(
      `  ${s.name.padEnd(14)} ${String(Math.round(rps)).padStart(7)} req/s ${cpu.toFixed(1).padStart(7)} µs CPU/req (least ${least.toFixed(1)})  ${errors} errors${ratios}\n`,
    );
  }
} finally {
  closeStreamClients();
  await cleanup();
}
process.exit();
