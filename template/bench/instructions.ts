// Instructions per request of the compiled fixture service (bench/build.ts, bench/proto.ts), counted by valgrind's callgrind: unlike time, the
// count barely moves with other load on the machine, so small hot-path changes can be compared on a
// busy one. The service runs under callgrind (30-100× slower), gets a warm-up, then its counters are
// zeroed, N requests are sent, and the count is dumped and divided by N.
//
//   node --import tsx bench/instructions.ts http|fastify|connect|grpc-web|grpc|grpc-js|grpc-js-proto-loader|connect-h2|connect-stream [dist=dist-bench] [requests=2000] [warmup=3000] [KEY=VALUE…]
//
// http: POST /api/v1/echo to the service (GATEWAY_MODE=in-process unless given); fastify: the same to
// the bare fastify reference (bench/servers/fastify.ts); connect and grpc-web: Echo as Connect JSON and as
// gRPC-Web to the service's HTTP port, as `make bench`'s browser rows. HTTP/1.1, 8 keep-alive connections.
// connect-h2: Connect JSON Echo over h2c to the service's HTTP port, gateway as configured, by h2load as in
// `make bench`'s Connect over HTTP/2 row. connect-stream: Connect client-streaming Sum calls of 10 messages over
// h2c, 8 at a time, as `bench/ab.ts connect-stream` makes them (a "request" is then a call).
// grpc: gRPC Echo to the service's gRPC port; grpc-js: the same to the bare grpc-js reference
// (bench/servers/grpc-js.ts); grpc-js-proto-loader: the grpc-js + proto-loader reference
// (bench/servers/grpc-js-proto-loader.ts). Sent by h2load as in `make bench` (16 connections × 8 streams; SHAPE=CxM
// to change it).
// CACHE_SIM=1 also simulates the caches (callgrind --cache-sim=yes, slower still) and prints the data reads and
// writes that missed the first-level and the last-level cache a request: where two builds run the same
// instructions but not in the same time, misses may say why. The last level is set to 8 MiB (16-way): valgrind
// would take this machine's, which a VM reports as 512 MB.
// CALLGRIND_KEEP=<file> keeps the dump of the measured requests there, for `callgrind_annotate <file>`:
// V8's builtins (Builtins_*), the garbage collector and Node's C++ are named in it (JIT-compiled
// JavaScript is not), which shows where two builds' counts differ.
//
//   node --import tsx bench/instructions.ts startup [dist=dist-bench] [starts=3] [KEY=VALUE…]
//
// startup: instructions from the start of `node <dist>/main.js` until its first 200 from /readycheck, all
// threads (GC, compiler) included, for each of `starts` starts; the first fills Node's compile cache when
// it is cold, so compare the later ones.
import { execFileSync, spawn } from "node:child_process";
import { copyFileSync, readFileSync } from "node:fs";
import { Agent, request } from "node:http";
import os from "node:os";
import path from "node:path";
import { checkConnectStream, connectStreamCalls } from "./connect-streams.js";
import {
  BENCH_DIST,
  baseEnv,
  CONNECT_JSON_REQUEST,
  checkConnectH2,
  checkGrpc,
  checkGrpcWeb,
  checkHttp,
  ECHO_PATH,
  freePort,
  GRPC_BODY,
  GRPC_REQUEST,
  HTTP_BODY,
  h2loadArgs,
  probe,
  ROOT,
  run,
  sleep,
} from "./lib.js";

const [target = "", dist = BENCH_DIST, nArg, warmArg, ...pairs] = process.argv.slice(2);
if (target === "startup") await startup();
const targets = ["http", "fastify", "connect", "grpc-web", "grpc", "grpc-js", "grpc-js-proto-loader", "connect-h2", "connect-stream"];
if (!targets.includes(target))
  throw new Error(
    `usage: instructions.ts ${targets.join("|")} [dist] [requests] [warmup] [KEY=VALUE…] | startup [dist] [starts] [KEY=VALUE…]`,
  );
/** Sent by h2load: gRPC calls, or Connect JSON over h2c. */
const h2 = target === "grpc" || target.startsWith("grpc-js") || target === "connect-h2";
const h2Request = target === "connect-h2" ? CONNECT_JSON_REQUEST : GRPC_REQUEST;
/** The bare references run from source and report over IPC. */
const reference = target === "fastify" || target.startsWith("grpc-js");
/**
 * SHAPE=CxM (gRPC): h2load -cC -mM instead of make bench's 16 × 8. SHAPE=1x1 sends one call at a time, so no
 * count depends on how many calls one turn of the loop happens to take: the steadiest count of per-call work.
 */
const shapeMatch = /^(\d+)x(\d+)$/.exec(process.env.SHAPE ?? "16x8");
if (!shapeMatch) throw new Error(`SHAPE=${process.env.SHAPE}: give clients x streams, as 1x1`);
const shape = { clients: Number(shapeMatch[1]), streams: Number(shapeMatch[2]) };
const N = Number(nArg ?? 2000);
const WARM = Number(warmArg ?? 3000);
const env = Object.fromEntries(pairs.map((p) => [p.slice(0, p.indexOf("=")), p.slice(p.indexOf("=") + 1)]));

const port = await freePort();
const out = path.join(os.tmpdir(), `callgrind-${process.pid}.out`);
const args = reference ? ["--import", "tsx", path.join("bench", "servers", `${target}.ts`)] : [path.join(dist, "main.js")];
// The service is loaded on its gRPC port (grpc) or its HTTP port (http, connect, grpc-web, connect-h2, connect-stream); the references on PORT.
const serverEnv = reference
  ? { PORT: String(port), ...env }
  : {
      ...(target === "http" ? { GATEWAY_MODE: "in-process" } : {}),
      GRPC_PORT: String(target === "grpc" ? port : await freePort()),
      HTTP_PORT: String(target === "grpc" ? await freePort() : port),
      ...env,
    };
const cacheSim = process.env.CACHE_SIM === "1";
const child = spawn(
  "valgrind",
  [
    "--tool=callgrind",
    ...(cacheSim ? ["--cache-sim=yes", "--LL=8388608,16,64"] : []),
    `--callgrind-out-file=${out}`,
    process.execPath,
    ...args,
  ],
  {
    cwd: ROOT,
    env: baseEnv(serverEnv),
    stdio: ["ignore", "ignore", "inherit", ...(reference ? (["ipc"] as const) : [])],
  },
);

const agent = new Agent({ keepAlive: true, maxSockets: 8 });
/** What an HTTP/1.1 target POSTs: the REST route, or Echo's own path as Connect JSON or gRPC-Web. */
const posted =
  target === "grpc-web"
    ? { path: ECHO_PATH, body: readFileSync(GRPC_BODY), headers: { "content-type": "application/grpc-web+proto", "x-grpc-web": "1" } }
    : { path: target === "connect" ? ECHO_PATH : "/api/v1/echo", body: HTTP_BODY, headers: { "content-type": "application/json" } };
function post(): Promise<number> {
  return new Promise((resolve, reject) => {
    const req = request({ port, host: "127.0.0.1", method: "POST", path: posted.path, agent, headers: posted.headers }, (res) => {
      res.resume();
      res.on("end", () => resolve(res.statusCode ?? 0));
    });
    req.on("error", reject);
    req.end(posted.body);
  });
}
/** `n` Echo calls by h2load, which fails on a non-200 (grpc-status is checked once before measuring). */
async function sendH2(n: number): Promise<void> {
  const out = await run("h2load", ["-n", String(n), ...h2loadArgs(port, shape, h2Request)]);
  const m = /requests: \d+ total, \d+ started, \d+ done, (\d+) succeeded/.exec(out);
  if (Number(m?.[1]) !== n) throw new Error(`h2load: not every call succeeded:\n${out}`);
}
async function send(n: number): Promise<void> {
  if (h2) return sendH2(n);
  if (target === "connect-stream") return connectStreamCalls(port, n, 8);
  let next = 0;
  const worker = async () => {
    while (next++ < n) {
      const status = await post();
      if (status !== 200) throw new Error(`status ${status}`);
    }
  };
  await Promise.all(Array.from({ length: 8 }, worker));
}

try {
  for (;;) {
    if (child.exitCode !== null) throw new Error("the server exited");
    if (
      await (h2 ? sendH2(128) : target === "connect-stream" ? connectStreamCalls(port, 1, 1) : post()).then(
        (s) => s === undefined || s === 200,
        () => false,
      )
    )
      break;
    await sleep(500);
  }
  // h2load sees HTTP 200 only: one checked call first, so a build that answers UNIMPLEMENTED is not measured.
  // A 200 can still carry an error (gRPC-Web's trailers, a Connect error body): one call is checked whole first.
  if (target === "connect-h2") await checkConnectH2({ name: dist, port });
  else if (target === "connect") await checkHttp({ name: dist, port }, ECHO_PATH);
  else if (target === "grpc-web") await checkGrpcWeb({ name: dist, port });
  else if (target === "connect-stream") await checkConnectStream({ name: dist, port });
  else if (h2) await checkGrpc({ name: reference ? target : dist, port });
  await send(WARM);
  execFileSync("callgrind_control", ["-z", String(child.pid)], { stdio: "ignore" });
  await send(N);
  execFileSync("callgrind_control", ["-d", String(child.pid)], { stdio: "ignore" });
  await sleep(500);
  const dump = execFileSync("sh", ["-c", `ls -t ${out}* | head -1`], { encoding: "utf8" }).trim();
  const dumps = readFileSync(dump, "utf8");
  if (process.env.CALLGRIND_KEEP) copyFileSync(dump, process.env.CALLGRIND_KEEP);
  const total = Number(/^summary:\s+(\d+)/m.exec(dumps)?.[1] ?? /^totals:\s+(\d+)/m.exec(dumps)?.[1]);
  process.stdout.write(
    `${target} ${dist} ${Object.keys(env).length ? pairs.join(" ") : ""}: ${(total / N / 1000).toFixed(1)} k instructions per request (${N} requests after ${WARM})\n`,
  );
  if (cacheSim) process.stdout.write(`  ${cacheMisses(dumps, N)}\n`);
} finally {
  child.kill("SIGKILL");
  execFileSync("sh", ["-c", `rm -f ${out}*`]);
}
process.exit();

/** The data cache misses a request from a --cache-sim dump: its `events:` line names the columns of `summary:`. */
function cacheMisses(dump: string, n: number): string {
  const events = /^events:\s+(.+)$/m.exec(dump)?.[1]?.split(/\s+/) ?? [];
  const totals = (/^summary:\s+(.+)$/m.exec(dump)?.[1] ?? /^totals:\s+(.+)$/m.exec(dump)?.[1] ?? "").split(/\s+/).map(Number);
  const per = (name: string) => (totals[events.indexOf(name)] ?? Number.NaN) / n;
  return `data reads ${(per("Dr") / 1000).toFixed(1)} k, writes ${(per("Dw") / 1000).toFixed(1)} k; first-level misses ${per("D1mr").toFixed(0)} read, ${per("D1mw").toFixed(0)} write; last-level ${per("DLmr").toFixed(0)} read, ${per("DLmw").toFixed(0)} write (a request)`;
}

async function startup(): Promise<never> {
  const starts = Number(nArg ?? 3);
  const given = [warmArg, ...pairs].filter((p): p is string => p?.includes("=") === true);
  const startEnv = Object.fromEntries(given.map((p) => [p.slice(0, p.indexOf("=")), p.slice(p.indexOf("=") + 1)]));
  for (let i = 0; i < starts; i++) {
    const httpPort = await freePort();
    const file = path.join(os.tmpdir(), `callgrind-startup-${process.pid}-${i}.out`);
    const child = spawn(
      "valgrind",
      ["-q", "--tool=callgrind", `--callgrind-out-file=${file}`, process.execPath, path.join(dist, "main.js")],
      {
        cwd: ROOT,
        env: baseEnv({ GRPC_PORT: String(await freePort()), HTTP_PORT: String(httpPort), ...startEnv }),
        stdio: ["ignore", "ignore", "inherit"],
      },
    );
    try {
      while ((await probe(httpPort)) !== 200) {
        if (child.exitCode !== null) throw new Error("the server exited");
        await sleep(50);
      }
      execFileSync("callgrind_control", ["-d", String(child.pid)], { stdio: "ignore" });
      await sleep(500);
      const dump = readFileSync(execFileSync("sh", ["-c", `ls -t ${file}* | head -1`], { encoding: "utf8" }).trim(), "utf8");
      const count = Number(/^summary:\s+(\d+)/m.exec(dump)?.[1] ?? /^totals:\s+(\d+)/m.exec(dump)?.[1]);
      process.stdout.write(`startup ${dist} ${given.join(" ")}: start ${i + 1}: ${(count / 1e6).toFixed(0)} M instructions to ready\n`);
    } finally {
      child.kill("SIGKILL");
      execFileSync("sh", ["-c", `rm -f ${file}*`]);
    }
  }
  process.exit();
}
