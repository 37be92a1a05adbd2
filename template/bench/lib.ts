// The bench's building blocks: processes (tracked, pinned, always reaped), the servers under test (the
// framework's fixture service, compiled into dist-bench/, and the bare references), the load generators and
// their parsing. Used by run.ts (`make bench`), soak.ts, ab.ts, profile.ts and the other bench scripts.

import { type ChildProcess, spawn, spawnSync } from "node:child_process";
import { once } from "node:events";
import { closeSync, existsSync, mkdtempSync, openSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import http from "node:http";
import http2 from "node:http2";
import net from "node:net";
import os from "node:os";
import path from "node:path";
import { text } from "node:stream/consumers";
import { fileURLToPath } from "node:url";
import { create, fromBinary, toBinary } from "@bufbuild/protobuf";
import { Client, credentials, Metadata, status } from "@grpc/grpc-js";
import { EchoRequestSchema, EchoResponseSchema, Service } from "./proto.js";

export const ROOT = fileURLToPath(new URL("..", import.meta.url));
export const num = (name: string, fallback: number) => {
  const v = Number(process.env[name]);
  return Number.isFinite(v) && v > 0 ? v : fallback;
};
export const SECONDS = num("BENCH_SECONDS", 6);
export const RUNS = Math.max(1, Math.round(num("BENCH_RUNS", 3)));
export const WARMUP = num("BENCH_WARMUP", 3);
export const SSE_CLIENTS = Math.round(num("BENCH_SSE_CLIENTS", 1000));
export const SSE_SECONDS = num("BENCH_SSE_SECONDS", 10);
export const SSE_INTERVAL_MS = 100;
export const STARTUP_RUNS = 9;
// h2load: 16 connections × 8 concurrent streams; wrk: 64 keep-alive connections. One load thread each.
/** h2load's load shapes for gRPC unary: many connections with a few calls each, and few connections with many. */
export interface H2Shape {
  clients: number;
  streams: number;
}
export const H2_SHAPES: readonly H2Shape[] = [
  { clients: 16, streams: 8 },
  { clients: 4, streams: 32 },
];
const [DEFAULT_SHAPE] = H2_SHAPES as [H2Shape];
export const WRK_CONNECTIONS = 64;

export const MESSAGE = "The quick brown fox jumps over the lazy dog";
export const HTTP_BODY = JSON.stringify({ message: MESSAGE });
export const ECHO_PATH = `/${Service.typeName}/${Service.method.echo.name}`;
export const tmp = mkdtempSync(path.join(os.tmpdir(), "bench-"));

// ---------------------------------------------------------------------------------------------------
// Processes: every child is tracked, and killed and reaped whatever way this script ends.

export const children = new Set<ChildProcess>();

export function track(child: ChildProcess): ChildProcess {
  children.add(child);
  child.once("exit", () => children.delete(child));
  return child;
}

/** SIGTERM, then SIGKILL after `graceMs`; resolves once the process is reaped. */
export function stop(child: ChildProcess, graceMs = 2000): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return Promise.resolve();
  return new Promise((resolve) => {
    const timer = setTimeout(() => child.kill("SIGKILL"), graceMs);
    child.once("exit", () => {
      clearTimeout(timer);
      resolve();
    });
    child.kill("SIGTERM");
  });
}

export async function stopAll(): Promise<void> {
  await Promise.all([...children].map((c) => stop(c)));
}

/** Stops every process still running and removes the temporary files; call once at the end. */
export async function cleanup(): Promise<void> {
  await stopAll();
  rmSync(tmp, { recursive: true, force: true });
}

export const leftovers = () => children.size;

/**
 * The compiled service the benchmarks run: the framework's fixture service (bench/proto.ts), built by
 * bench/build.ts as `npm run build` builds yours into dist/.
 */
export const BENCH_DIST = "dist-bench";

/** Fails early, naming the make target that installs or builds what is missing: h2load, wrk and dist-bench/main.js. */
export function requireBenchInputs(target: string): void {
  for (const [tool, args] of [
    ["h2load", ["--version"]],
    ["wrk", ["-v"]],
  ] as const) {
    if (spawnSync(tool, args).error) throw new Error(`${tool} is missing: \`make ${target}\` installs nghttp2-client and wrk with apt-get`);
  }
  if (!existsSync(path.join(ROOT, BENCH_DIST, "main.js")))
    throw new Error(`${BENCH_DIST}/main.js is missing: run \`node --import tsx bench/build.ts\` (make ${target} does)`);
}

/**
 * Runs a script's `main`: a failure is printed (not after Ctrl-C) and sets exit code 1, and every process
 * it started is stopped. Exits at the end unless a child would not stop or Ctrl-C is handling the exit.
 */
export async function runScript(name: string, main: () => Promise<void>): Promise<void> {
  try {
    await main();
  } catch (err) {
    if (!isInterrupted()) process.stderr.write(`${name} failed: ${(err as Error).stack ?? err}\n`);
    process.exitCode = 1;
  } finally {
    await cleanup();
  }
  if (leftovers() === 0 && !isInterrupted()) process.exit();
}

let interrupted = false;
export const isInterrupted = () => interrupted;
for (const signal of ["SIGINT", "SIGTERM", "SIGHUP"] as const) {
  process.on(signal, () => {
    if (interrupted) return;
    interrupted = true;
    process.stderr.write(`\n${signal}: stopping every server started by the bench…\n`);
    for (const c of children) c.kill("SIGKILL");
    stopAll().finally(() => {
      rmSync(tmp, { recursive: true, force: true });
      process.exit(130);
    });
  });
}
process.on("exit", () => {
  for (const c of children) c.kill("SIGKILL"); // last resort; normally none is left
});

// ---------------------------------------------------------------------------------------------------
// The machine, and pinning.

export function firstLine(cmd: string, args: string[]): string {
  const r = spawnSync(cmd, args, { encoding: "utf8" });
  if (r.error) return "not found";
  return `${r.stdout}${r.stderr}`.split("\n")[0]!.trim();
}

export function pkgVersion(name: string): string {
  try {
    return (JSON.parse(readFileSync(path.join(ROOT, "node_modules", name, "package.json"), "utf8")) as { version: string }).version;
  } catch {
    return "?";
  }
}

/** Pins this process (and so the load generators it starts) to CPU 1; servers are started on CPU 0. */
export const CPUS = os.availableParallelism(); // before pinning narrows it to one

/** Pins this process (and so the load generators it starts) to CPU 1; servers are started on CPU 0. */
export function pin(): string {
  const r = tryPin();
  pinned = r.server;
  return r.note;
}

function tryPin(): { server: string[]; note: string } {
  const cpus = CPUS;
  if (cpus < 2) return { server: [], note: `not applied: ${cpus} CPU` };
  const r = spawnSync("taskset", ["-a", "-p", "-c", "1", String(process.pid)], { encoding: "utf8" });
  if (r.error || r.status !== 0) return { server: [], note: `not applied: taskset failed (${r.error?.message ?? r.stderr.trim()})` };
  const check = spawnSync("taskset", ["-c", "0", "true"]);
  if (check.status !== 0) return { server: [], note: "not applied: taskset -c 0 refused" };
  return { server: ["taskset", "-c", "0"], note: "applied: servers on CPU 0; this script and the load generators on CPU 1" };
}

export const loadavg = () =>
  os
    .loadavg()
    .map((l) => l.toFixed(2))
    .join(" ");

export function machine(pinning: string): string[] {
  const commit = firstLine("git", ["-C", ROOT, "rev-parse", "--short", "HEAD"]);
  const dirty = spawnSync("git", ["-C", ROOT, "status", "--porcelain", "--", "src"], { encoding: "utf8" }).stdout?.trim()
    ? " (src modified)"
    : "";
  const ulimit = firstLine("sh", ["-c", "ulimit -n"]);
  return [
    `cpu:      ${os.cpus()[0]?.model ?? "?"}, ${CPUS} CPUs, ${(os.totalmem() / 2 ** 30).toFixed(0)} GiB, ${os.type()} ${os.release()} ${os.arch()}`,
    `pinning:  ${pinning}`,
    `node:     ${process.version}; @grpc/grpc-js ${pkgVersion("@grpc/grpc-js")}, fastify ${pkgVersion("fastify")}, @bufbuild/protobuf ${pkgVersion("@bufbuild/protobuf")}, @connectrpc/connect-node ${pkgVersion("@connectrpc/connect-node")}`,
    `tools:    ${firstLine("h2load", ["--version"])}; ${firstLine("wrk", ["-v"])}; ulimit -n ${ulimit}`,
    `commit:   ${commit}${dirty}`,
    `runs:     median of ${RUNS} interleaved runs of ${SECONDS} s after ${WARMUP} s warm-up per server`,
    `load:     load average ${loadavg()} at the start (other processes on the machine skew every figure)`,
  ];
}

// ---------------------------------------------------------------------------------------------------
// Servers.

export interface Counts {
  ok: number;
  errors: number;
}

export interface Server {
  name: string;
  child: ChildProcess;
  /** The port the load goes to. */
  port: number;
  /** Calls answered OK and not, as the server counted them (gRPC status is invisible to h2load). */
  counts(): Promise<Counts | undefined>;
  /** For the service: what its `ready` log line said. */
  ready?: Record<string, unknown>;
  /** For the service: the old-generation collections (mark-compact) its process has run, from its /metrics. */
  majorGcs?(): Promise<number | undefined>;
}

export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const s = net.createServer();
    s.once("error", reject);
    s.listen(0, "127.0.0.1", () => {
      const { port } = s.address() as net.AddressInfo;
      s.close(() => resolve(port));
    });
  });
}

/**
 * A plain environment, so nothing from the caller's shell (LOG_LEVEL, .env exports…) changes a server. The
 * service listens on loopback only, as the references do: its default (0.0.0.0) would let anyone who reaches
 * this machine call it (Fail with panic, the profiles) while the bench runs.
 */
export function baseEnv(extra: Record<string, string>): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = { LISTEN_HOST: "127.0.0.1" };
  for (const k of ["PATH", "HOME", "LANG", "TMPDIR"]) if (process.env[k] !== undefined) env[k] = process.env[k];
  return { ...env, ...extra };
}

let pinned: string[] = [];
export let logSeq = 0;

export function launch(name: string, args: string[], env: Record<string, string>, ipc: boolean): { child: ChildProcess; log: string } {
  const log = path.join(tmp, `${++logSeq}-${name.replace(/[^a-z0-9]+/gi, "-")}.log`);
  const fd = openSync(log, "w");
  const [cmd, ...rest] = [...pinned, process.execPath, ...args];
  const child = track(
    spawn(cmd!, rest, { cwd: ROOT, env: baseEnv(env), stdio: ["ignore", fd, fd, ...(ipc ? (["ipc"] as const) : [])], detached: true }),
  );
  closeSync(fd);
  return { child, log };
}

/** Rejects if the process exits before it is stopped (for a race against its start-up). */
export function exited(child: ChildProcess, log: string): Promise<never> {
  const p = new Promise<never>((_, reject) => {
    child.once("exit", (code, signal) => {
      if (!interrupted) reject(new Error(`exited early (${signal ?? code}); its output:\n${readFileSync(log, "utf8").slice(-3000)}`));
    });
  });
  p.catch(() => {}); // once the race is over, a later exit is the normal stop
  return p;
}

/** A bare reference server or the peer (bench/servers/*.ts): ready when it says it listens over IPC. */
export async function startBench(name: string, script: string, ...args: string[]): Promise<Server> {
  const port = await freePort();
  const { child, log } = launch(name, ["--import", "tsx", path.join("bench", "servers", script), ...args], { PORT: String(port) }, true);
  const listening = new Promise<void>((resolve) => child.on("message", (m: { listening?: number }) => m.listening && resolve()));
  await Promise.race([listening, exited(child, log), timeout(30_000, `${name} did not start`)]);
  const counts = () =>
    new Promise<Counts>((resolve) => {
      const onMessage = (m: { counts?: Counts }) => {
        if (!m.counts) return;
        child.off("message", onMessage);
        resolve(m.counts);
      };
      child.on("message", onMessage);
      child.send("counts");
    });
  return { name, child, port, counts };
}

/** The compiled fixture service (dist-bench/main.js, or another build's entry) with its default configuration, logs to a file. */
export async function startService(
  name: string,
  extra: Record<string, string> = {},
  main = path.join(BENCH_DIST, "main.js"),
): Promise<Server & { httpPort: number }> {
  const [grpcPort, httpPort] = [await freePort(), await freePort()];
  const env = { GRPC_PORT: String(grpcPort), HTTP_PORT: String(httpPort), GRPC_GRACEFUL_DURATION_IN_SECONDS: "0", ...extra };
  const { child, log } = launch(name, [main], env, false);
  await Promise.race([waitReady(httpPort), exited(child, log), timeout(30_000, `${name} did not get ready`)]);
  const ready = await readyLine(log);
  // Undefined when DISABLE_PROMETHEUS (only bench/ablation.ts turns it off).
  const counts = async (): Promise<Counts | undefined> => {
    const text = await httpGet(httpPort, "/metrics").catch(() => undefined);
    if (text === undefined) return undefined;
    const c = { ok: 0, errors: 0 };
    for (const line of text.split("\n")) {
      if (!line.startsWith("grpc_server_handled_total{") || !line.includes('grpc_method="Echo"')) continue;
      const n = Number(line.slice(line.lastIndexOf(" ") + 1));
      if (line.includes('grpc_code="OK"')) c.ok += n;
      else c.errors += n;
    }
    return c;
  };
  const majorGcs = async (): Promise<number | undefined> => {
    const text = await httpGet(httpPort, "/metrics").catch(() => undefined);
    const m = text === undefined ? null : /^nodejs_gc_duration_seconds_count\{kind="major"\} (\d+)/m.exec(text);
    return m ? Number(m[1]) : undefined;
  };
  return { name, child, port: grpcPort, httpPort, counts, ready, majorGcs };
}

export async function readyLine(log: string): Promise<Record<string, unknown> | undefined> {
  for (let i = 0; i < 100; i++) {
    for (const line of readFileSync(log, "utf8").split("\n")) {
      if (line.includes('"msg":"ready"')) return JSON.parse(line) as Record<string, unknown>;
    }
    await sleep(10);
  }
  return undefined;
}

export function timeout(ms: number, message: string): Promise<never> {
  const p = new Promise<never>((_, reject) => setTimeout(() => reject(new Error(message)), ms).unref());
  p.catch(() => {}); // observed through a race only
  return p;
}

export const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

export function httpGet(port: number, urlPath: string): Promise<string> {
  return new Promise((resolve, reject) => {
    http
      .get({ host: "127.0.0.1", port, path: urlPath, agent: false }, (res) => {
        let body = "";
        res.setEncoding("utf8");
        res.on("data", (c: string) => (body += c));
        res.on("end", () => (res.statusCode === 200 ? resolve(body) : reject(new Error(`GET ${urlPath}: ${res.statusCode}`))));
      })
      .on("error", reject);
  });
}

/** One GET /readycheck; resolves to its status, or 0 when the port does not answer yet. */
export function probe(port: number): Promise<number> {
  return new Promise((resolve) => {
    const req = http.get({ host: "127.0.0.1", port, path: "/readycheck", agent: false }, (res) => {
      res.resume();
      resolve(res.statusCode ?? 0);
    });
    req.on("error", () => resolve(0));
  });
}

/** Polls /readycheck back to back (no sleep) until it answers 200. */
export async function waitReady(port: number): Promise<void> {
  while ((await probe(port)) !== 200) {
    if (interrupted) return;
  }
}

// ---------------------------------------------------------------------------------------------------
// One real request to each server before loading it: the payload is right and the answer is the echo.

export async function checkGrpc(s: Pick<Server, "name" | "port">): Promise<void> {
  const client = new Client(`127.0.0.1:${s.port}`, credentials.createInsecure());
  try {
    const reply = await new Promise<unknown>((resolve, reject) =>
      client.makeUnaryRequest(
        ECHO_PATH,
        (m: Uint8Array) => Buffer.from(m),
        (b: Buffer) => fromBinary(EchoResponseSchema, b),
        toBinary(EchoRequestSchema, create(EchoRequestSchema, { message: MESSAGE })),
        new Metadata(),
        (err, value) => (err ? reject(err) : resolve(value)),
      ),
    ).catch((err: { code?: number }) => {
      // A build of your service (npm run build) rather than of the fixture service: h2load would count its
      // UNIMPLEMENTED answers (HTTP 200) as calls.
      if (err.code !== status.UNIMPLEMENTED) throw err;
      throw new Error(
        `${s.name} does not serve ${ECHO_PATH}: the bench runs the fixture service, built by \`node --import tsx bench/build.ts [outdir]\``,
      );
    });
    const r = reply as { message: string; traceId: string; receivedAt?: unknown };
    if (r.message !== MESSAGE || !r.traceId || !r.receivedAt) throw new Error(`${s.name}: unexpected Echo reply ${JSON.stringify(r)}`);
  } finally {
    client.close();
  }
}

export async function checkHttp(s: Pick<Server, "name" | "port">, urlPath: string): Promise<void> {
  const res = await fetch(`http://127.0.0.1:${s.port}${urlPath}`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: HTTP_BODY,
  });
  const body = (await res.json()) as { message?: string; traceId?: string; receivedAt?: string };
  if (res.status !== 200 || body.message !== MESSAGE || !body.traceId || !body.receivedAt) {
    throw new Error(`${s.name}: POST ${urlPath} answered ${res.status} ${JSON.stringify(body)}`);
  }
}

// ---------------------------------------------------------------------------------------------------
// Load generators.

export interface Run {
  rps: number;
  /** Latency percentiles in ms. */
  p50: number;
  p99: number;
  requests: number;
  errors: number;
  /** The server's CPU time (user + system) per request, in µs: unlike req/s, barely moved by other load on the machine. */
  cpuUs: number;
  /** Where that CPU went, per request (h2load runs only). */
  split?: CpuSplit;
}

/**
 * A process's CPU split between its main thread (user and system time) and its other threads (V8's GC and
 * compiler helpers, libuv's pool), with the main thread's context switches: where to look when two builds differ
 * by time and not by instructions (callgrind sees no kernel time).
 */
export interface CpuSplit {
  mainUserUs: number;
  mainSystemUs: number;
  otherThreadsUs: number;
  voluntarySwitches: number;
  involuntarySwitches: number;
}

/** The split so far, in µs and switches (Linux /proc; undefined elsewhere). */
function cpuSplit(pid: number | undefined): CpuSplit | undefined {
  try {
    const total = cpuTime(pid);
    const [user, system] = userSystemUs(`/proc/${pid}/task/${pid}/stat`);
    const status = readFileSync(`/proc/${pid}/task/${pid}/status`, "utf8");
    const count = (name: string) => Number(new RegExp(`^${name}:\\s+(\\d+)`, "m").exec(status)?.[1]);
    return {
      mainUserUs: user,
      mainSystemUs: system,
      otherThreadsUs: total - user - system,
      voluntarySwitches: count("voluntary_ctxt_switches"),
      involuntarySwitches: count("nonvoluntary_ctxt_switches"),
    };
  } catch {
    return undefined;
  }
}

/** after − before, per request. */
function splitPer(before: CpuSplit | undefined, after: CpuSplit | undefined, requests: number): CpuSplit | undefined {
  if (!before || !after) return undefined;
  const keys = Object.keys(before) as (keyof CpuSplit)[];
  return Object.fromEntries(keys.map((k) => [k, (after[k] - before[k]) / requests])) as unknown as CpuSplit;
}

const CLK_TCK = Number(firstLine("getconf", ["CLK_TCK"])) || 100;

/** CPU time a process used so far, in µs (Linux /proc; NaN elsewhere). */
export function cpuTime(pid: number | undefined): number {
  try {
    const [user, system] = userSystemUs(`/proc/${pid}/stat`);
    return user + system;
  } catch {
    return Number.NaN;
  }
}

/** utime and stime of a /proc stat file (a process's or one thread's), in µs. */
function userSystemUs(statPath: string): [number, number] {
  const stat = readFileSync(statPath, "utf8");
  const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
  return [(Number(fields[11]) * 1e6) / CLK_TCK, (Number(fields[12]) * 1e6) / CLK_TCK];
}

export function run(cmd: string, args: string[], env?: NodeJS.ProcessEnv): Promise<string> {
  return new Promise((resolve, reject) => {
    const child = track(spawn(cmd, args, { env: env ?? process.env, stdio: ["ignore", "pipe", "pipe"] }));
    let out = "";
    child.stdout!.on("data", (c: Buffer) => (out += c));
    child.stderr!.on("data", (c: Buffer) => (out += c));
    child.on("error", reject);
    child.on("exit", (code) => (code === 0 ? resolve(out) : reject(new Error(`${cmd} exited ${code}:\n${out.slice(-2000)}`))));
  });
}

export const GRPC_BODY = path.join(tmp, "echo.grpc");
{
  // The gRPC frame h2load posts: flag 0 (uncompressed), uint32 big-endian length, the EchoRequest.
  const message = toBinary(EchoRequestSchema, create(EchoRequestSchema, { message: MESSAGE }));
  const frame = Buffer.alloc(5 + message.length);
  frame.writeUInt32BE(message.length, 1);
  frame.set(message, 5);
  writeFileSync(GRPC_BODY, frame);
}

export const JSON_BODY = path.join(tmp, "echo.json");
writeFileSync(JSON_BODY, HTTP_BODY);

/** What h2load posts: gRPC Echo (the default), or another body and headers (Connect JSON over HTTP/2). */
export interface H2Request {
  body: string;
  headers: string[];
}

export const GRPC_REQUEST: H2Request = { body: GRPC_BODY, headers: ["content-type: application/grpc", "te: trailers"] };
export const CONNECT_JSON_REQUEST: H2Request = { body: JSON_BODY, headers: ["content-type: application/json"] };

/** One gRPC-Web call answered OK: a message frame, then the trailer frame with grpc-status 0. */
export async function checkGrpcWeb(s: Pick<Server, "name" | "port">): Promise<void> {
  const res = await fetch(`http://127.0.0.1:${s.port}${ECHO_PATH}`, {
    method: "POST",
    headers: { "content-type": "application/grpc-web+proto", "x-grpc-web": "1" },
    body: readFileSync(GRPC_BODY),
  });
  const body = Buffer.from(await res.arrayBuffer());
  const trailer = body.subarray(5 + body.readUInt32BE(1));
  if (res.status !== 200 || trailer[0] !== 0x80 || !/grpc-status: ?0/.test(trailer.subarray(5).toString()))
    throw new Error(`${s.name}: gRPC-Web Echo failed: HTTP ${res.status} ${body.toString("latin1")}`);
}

/** One Connect JSON Echo over h2c answered 200 with the message back (connect-node's h2c server speaks no HTTP/1.1). */
export async function checkConnectH2(s: Pick<Server, "name" | "port">): Promise<void> {
  const session = http2.connect(`http://127.0.0.1:${s.port}`);
  try {
    const req = session.request({ ":method": "POST", ":path": ECHO_PATH, "content-type": "application/json" });
    req.end(HTTP_BODY);
    const [[headers], body] = await Promise.all([once(req, "response"), text(req)]);
    if (headers[":status"] !== 200 || JSON.parse(body).message !== MESSAGE)
      throw new Error(`${s.name}: Connect Echo over h2c failed: HTTP ${headers[":status"]} ${body}`);
  } finally {
    session.close();
  }
}

/** What wrk posts for gRPC-Web Echo. */
export const GRPC_WEB_BODY: WrkBody = { file: GRPC_BODY, contentType: "application/grpc-web+proto", header: "X-Grpc-Web: 1" };

export function h2loadArgs(port: number, shape: H2Shape = DEFAULT_SHAPE, request: H2Request = GRPC_REQUEST): string[] {
  return [
    ...["-c", String(shape.clients), "-m", String(shape.streams), "-t", "1", "-d", request.body],
    ...request.headers.flatMap((h) => ["-H", h]),
    `http://127.0.0.1:${port}${ECHO_PATH}`,
  ];
}

/** "finished in 6.00s, 12345.67 req/s" (h2load prints ms below one second). */
export function h2loadRate(out: string): number {
  const m = /finished in [\d.]+m?s, ([\d.]+) req\/s/.exec(out);
  if (!m) throw new Error(`h2load output not understood:\n${out}`);
  return Number(m[1]);
}

/**
 * h2load for `seconds`. h2load sees only the HTTP status, never grpc-status, so the server's own count
 * of OK calls is read before and after: a call h2load counted as succeeded that the server did not
 * answer OK is an error (the server may count a few more OK calls than h2load: those in flight when it
 * stopped). Latencies come from h2load's per-request log.
 */
export async function h2load(s: Server, seconds: number, shape: H2Shape = DEFAULT_SHAPE, request: H2Request = GRPC_REQUEST): Promise<Run> {
  const logFile = path.join(tmp, "h2load.log");
  const before = await s.counts();
  const cpu = cpuTime(s.child.pid);
  const splitBefore = cpuSplit(s.child.pid);
  const out = await run("h2load", ["-D", String(seconds), "--log-file", logFile, ...h2loadArgs(s.port, shape, request)]);
  const cpuUsed = cpuTime(s.child.pid) - cpu;
  const splitAfter = cpuSplit(s.child.pid);
  const after = await s.counts();
  const rps = h2loadRate(out);
  const m = /requests: (\d+) total, (\d+) started, (\d+) done, (\d+) succeeded, (\d+) failed, (\d+) errored, (\d+) timeout/.exec(out);
  if (!m) throw new Error(`h2load output not understood:\n${out}`);
  const [, , done, succeeded, failed, errored, timedOut] = m.slice(1).map(Number) as number[];
  const grpcErrors = before && after ? after.errors - before.errors + Math.max(0, succeeded! - (after.ok - before.ok)) : 0;
  const durations = readFileSync(logFile, "utf8")
    .split("\n")
    .filter(Boolean)
    .map((line) => Number(line.split("\t")[2]) / 1000);
  rmSync(logFile, { force: true });
  return {
    rps,
    ...percentiles(durations),
    requests: done!,
    errors: failed! + errored! + timedOut! + grpcErrors,
    cpuUs: cpuUsed / done!,
    split: splitPer(splitBefore, splitAfter, done!),
  };
}

export function percentiles(values: number[]): { p50: number; p99: number } {
  const sorted = Float64Array.from(values).sort();
  const at = (q: number) => sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))] ?? Number.NaN;
  return { p50: at(0.5), p99: at(0.99) };
}

export function wrkArgs(port: number, urlPath: string, seconds: number): string[] {
  return [
    ...["-t", "1", "-c", String(WRK_CONNECTIONS), "-d", `${seconds}s`, "--timeout", "5s"],
    ...["-s", path.join(ROOT, "bench", "post.lua"), `http://127.0.0.1:${port}${urlPath}`],
  ];
}

/** What wrk posts: the JSON echo body by default, or a file's bytes with their content type (gRPC-Web). */
export interface WrkBody {
  file: string;
  contentType: string;
  /** One more header, `name: value`. */
  header?: string;
}

export async function wrk(s: Server, urlPath: string, seconds: number, body?: WrkBody): Promise<Run> {
  const cpu = cpuTime(s.child.pid);
  const env = body
    ? {
        ...process.env,
        BENCH_BODY_FILE: body.file,
        BENCH_CONTENT_TYPE: body.contentType,
        ...(body.header ? { BENCH_HEADER: body.header } : {}),
      }
    : { ...process.env, BENCH_BODY: HTTP_BODY };
  const out = await run("wrk", wrkArgs(s.port, urlPath, seconds), env);
  const cpuUsed = cpuTime(s.child.pid) - cpu;
  const line = out.split("\n").find((l) => l.startsWith("BENCH "));
  if (!line) throw new Error(`wrk output not understood:\n${out}`);
  const r = JSON.parse(line.slice(6)) as Record<string, number>;
  return {
    rps: r.requests! / (r.duration_us! / 1e6),
    p50: r.p50_us! / 1000,
    p99: r.p99_us! / 1000,
    requests: r.requests!,
    errors: r.connect! + r.read! + r.write! + r.status! + r.timeout!,
    cpuUs: cpuUsed / r.requests!,
  };
}

// ---------------------------------------------------------------------------------------------------
// Measuring a group of servers: check, warm up, then interleaved rounds; medians per server.

export interface Measured {
  server: Server;
  rps: number;
  p50: number;
  p99: number;
  errors: number;
  /** Median server CPU µs per request. */
  cpuUs: number;
  runs: Run[];
}

export const median = (xs: number[]) => {
  const s = [...xs].sort((a, b) => a - b);
  const mid = s.length >> 1;
  return s.length % 2 ? s[mid]! : (s[mid - 1]! + s[mid]!) / 2;
};

export async function measure(servers: Server[], load: (s: Server, seconds: number) => Promise<Run>) {
  for (const s of servers) {
    progress(`warming up ${s.name}`);
    await load(s, WARMUP);
  }
  const runs = new Map<Server, Run[]>(servers.map((s) => [s, []]));
  for (let round = 1; round <= RUNS; round++) {
    for (const s of servers) {
      progress(`run ${round}/${RUNS}: ${s.name}`);
      runs.get(s)!.push(await load(s, SECONDS));
    }
  }
  const results = new Map<Server, Measured>();
  for (const s of servers) {
    const rs = runs.get(s)!;
    results.set(s, {
      server: s,
      rps: median(rs.map((r) => r.rps)),
      p50: median(rs.map((r) => r.p50)),
      p99: median(rs.map((r) => r.p99)),
      cpuUs: median(rs.map((r) => r.cpuUs)),
      errors: rs.reduce((a, r) => a + r.errors, 0),
      runs: rs,
    });
  }
  return results;
}

export function progress(text: string): void {
  process.stderr.write(`  · ${text}\n`);
}
