// `make bench`: the framework side by side with its references, in one run on this machine. "ours" is the
// framework's fixture service (bench/proto.ts: the same Echo, Countdown, Sum and Chat as the template's first
// service), compiled into dist-bench/ the way `npm run build` compiles yours, so the bench keeps working
// whatever your proto becomes.
//
// Every server is its own process, pinned to CPU 0 when the machine has two CPUs or more; this script
// and the load generators (h2load, wrk, the SSE client) run on CPU 1. Each group's servers are started
// together, each is checked with one real request and warmed up, then measured in interleaved rounds
// (A, B, C, A, B, C, …) so that a drift of the machine hits every server alike; each figure is the
// median of the rounds. Every process started here is killed and reaped at the end, on Ctrl-C too.
//
// Tunables (environment): BENCH_SECONDS (per run, 6), BENCH_RUNS (3), BENCH_WARMUP (seconds, 3),
// BENCH_SSE_CLIENTS (1000, also the WebSocket streams), BENCH_SSE_SECONDS (10, also WebSocket),
// BENCH_ONLY (some of grpc,streams,http,browser,http2,sse,ws,startup),
// BENCH_JSON (write the results there as JSON).

import { readFileSync, writeFileSync } from "node:fs";
import path from "node:path";
import { WS_PROTOCOL } from "../src/framework/browser/websocket.js";
import {
  BENCH_DIST,
  CONNECT_JSON_REQUEST,
  checkGrpc,
  checkGrpcWeb,
  checkHttp,
  cpuTime,
  ECHO_PATH,
  exited,
  freePort,
  GRPC_BODY,
  GRPC_WEB_BODY,
  H2_SHAPES,
  HTTP_BODY,
  h2load,
  h2loadArgs,
  launch,
  loadavg,
  type Measured,
  machine,
  measure,
  median,
  pin,
  progress,
  ROOT,
  readyLine,
  requireBenchInputs,
  run,
  runScript,
  type Server,
  SSE_CLIENTS,
  SSE_INTERVAL_MS,
  SSE_SECONDS,
  STARTUP_RUNS,
  sleep,
  startBench,
  startService,
  stop,
  timeout,
  waitReady,
  wrk,
  wrkArgs,
} from "./lib.js";
import { Service } from "./proto.js";
import { closeStreamClients, MESSAGES, type StreamKind, streamLoad } from "./streams.js";

// ---------------------------------------------------------------------------------------------------
// The table.

interface Row {
  name: string;
  rps?: string;
  p50?: string;
  p99?: string;
  cpu?: string;
  errors?: string;
  ratio?: string;
  target?: string;
  result?: string;
}

const rows: Row[] = [];
const notes: string[] = [];
const fmtRps = (n: number) => Math.round(n).toLocaleString("en-US");
const fmtMs = (n: number) => (n < 10 ? n.toFixed(2) : n.toFixed(1));

function section(title: string): void {
  rows.push({ name: title });
}

function measuredRow(name: string, m: Measured, ref?: { m: Measured; target: number }): void {
  const ratio = ref ? m.rps / ref.m.rps : undefined;
  rows.push({
    name: `  ${name}`,
    rps: fmtRps(m.rps),
    p50: fmtMs(m.p50),
    p99: fmtMs(m.p99),
    cpu: Number.isNaN(m.cpuUs) ? "?" : Math.round(m.cpuUs).toString(),
    errors: String(m.errors),
    ratio: ratio === undefined ? "ref" : `${ratio.toFixed(2)}×`,
    target: ref ? `≥ ${ref.target.toFixed(2)}×` : "",
    result: ref ? (ratio! >= ref.target && m.errors === 0 ? "PASS" : "FAIL") : "",
  });
}

function printTable(): string {
  const head: Row = {
    name: "name",
    rps: "req/s",
    p50: "p50 ms",
    p99: "p99 ms",
    cpu: "cpu µs/req",
    errors: "errors",
    ratio: "ratio",
    target: "target",
    result: "result",
  };
  const keys = ["name", "rps", "p50", "p99", "cpu", "errors", "ratio", "target", "result"] as const;
  const all = [head, ...rows];
  const width = Object.fromEntries(
    keys.map((k) => [k, Math.max(...all.filter((r) => r.rps !== undefined || r === head).map((r) => (r[k] ?? "").length))]),
  );
  const line = (r: Row) =>
    r.rps === undefined && r !== head
      ? r.name
      : keys.map((k, i) => (i === 0 ? (r[k] ?? "").padEnd(width[k]!) : (r[k] ?? "").padStart(width[k]!))).join("  ");
  return [line(head), ...rows.map(line)].join("\n");
}

// ---------------------------------------------------------------------------------------------------
// The benchmarks.

async function grpcGroup(): Promise<void> {
  const bare = await startBench("bare @grpc/grpc-js", "grpc-js.ts");
  const loader = await startBench("bare @grpc/grpc-js + proto-loader", "grpc-js-proto-loader.ts");
  const ours = await startService("ours: full default chain");
  const peer = await startBench("@connectrpc/connect-node", "connect.ts", "grpc");
  const servers = [bare, loader, ours, peer];
  for (const s of servers) await checkGrpc(s);
  for (const shape of H2_SHAPES) {
    const results = await measure(servers, (s, seconds) => h2load(s, seconds, shape));
    const [b, l, o, p] = servers.map((s) => results.get(s)!) as [Measured, Measured, Measured, Measured];
    section(`gRPC unary Echo — h2load ${h2loadArgs(0, shape).slice(0, 6).join(" ")}, ${fileSize(GRPC_BODY)}-byte gRPC frame`);
    measuredRow("bare @grpc/grpc-js with protobuf-es, same handler (reference)", b);
    measuredRow("ours, full default chain ÷ bare grpc-js (protobuf-es)", o, { m: b, target: 0.9 });
    measuredRow("bare @grpc/grpc-js with @grpc/proto-loader (protobufjs), same handler (reference)", l);
    measuredRow("ours, full default chain ÷ bare grpc-js (proto-loader)", o, { m: l, target: 0.9 });
    measuredRow("@connectrpc/connect-node (peer)", p);
    measuredRow("ours, full default chain ÷ connect-node", o, { m: p, target: 1.0 });
  }
  await Promise.all(servers.map((s) => stop(s.child)));
}

const STREAM_KINDS: [StreamKind, string][] = [
  ["server", "server-streaming Countdown"],
  ["client", "client-streaming Sum"],
  ["bidi", "bidi Chat"],
];

/** Messages/s through each kind of stream, the service against a bare grpc-js server with the same handlers. */
async function streamsGroup(): Promise<void> {
  const bare = await startBench("bare @grpc/grpc-js", "grpc-js.ts");
  const ours = await startService("ours: full default chain");
  const servers = [bare, ours];
  for (const s of servers) await checkGrpc(s);
  for (const [kind, title] of STREAM_KINDS) {
    const results = await measure(servers, streamLoad(kind));
    const [b, o] = servers.map((s) => results.get(s)!) as [Measured, Measured];
    section(
      `gRPC ${title} — messages/s, 8 concurrent calls of ${MESSAGES} messages (grpc-js client); p50/p99 per call, cpu µs per message`,
    );
    measuredRow("bare @grpc/grpc-js, same handler (reference)", b);
    measuredRow("ours, full default chain ÷ bare grpc-js", o, { m: b, target: 0.8 });
  }
  closeStreamClients();
  await Promise.all(servers.map((s) => stop(s.child)));
}

async function httpGroup(): Promise<void> {
  const bare = await startBench("bare fastify", "fastify.ts");
  const modes = ["in-process", "unix", "tcp"] as const;
  const ours = [];
  for (const mode of modes) ours.push(await startService(`ours: gateway ${mode}`, { GATEWAY_MODE: mode }));
  const peerServer = await startBench("@connectrpc/connect-node Connect JSON", "connect.ts", "json");
  const floor = await startBench("bare fastify → grpc-js loopback", "fastify-grpc.ts");
  const gateway = (s: Server) => ({ ...s, port: (s as Server & { httpPort: number }).httpPort });
  const targets = [bare, ...ours.map(gateway), floor];
  for (const s of targets) await checkHttp(s, "/api/v1/echo");
  await checkHttp(peerServer, ECHO_PATH);
  // The peer's path differs; it joins the same interleaved rounds.
  const peer = peerServer;
  const pathOf = (s: Server) => (s === peer ? ECHO_PATH : "/api/v1/echo");
  const results = await measure([...targets, peer], (s, seconds) => wrk(s, pathOf(s), seconds));
  const b = results.get(bare)!;
  section(`HTTP JSON unary POST /api/v1/echo — wrk ${wrkArgs(0, "", 0).slice(0, 4).join(" ")}, ${HTTP_BODY.length}-byte body`);
  measuredRow("bare fastify route, same JSON (reference)", b);
  const targetsByMode: Record<string, number | undefined> = { "in-process": 0.6 };
  let best: Measured | undefined;
  let bestMode = "";
  for (const [i, mode] of modes.entries()) {
    const m = results.get(targets[i + 1]!)!;
    const actual = String(m.server.ready?.gatewayMode ?? "?");
    const target = targetsByMode[mode];
    const name = `ours, gateway ${mode}${actual === mode ? "" : ` (ran as ${actual})`} ÷ fastify`;
    if (target === undefined) {
      measuredRow(name, m, { m: b, target: 0 });
      rows.at(-1)!.target = "—";
      rows.at(-1)!.result = m.errors === 0 ? "" : "FAIL";
    } else measuredRow(name, m, { m: b, target });
    if (!best || m.rps > best.rps) [best, bestMode] = [m, mode];
  }
  // Information, no target: what the tcp mode's architecture costs with no framework at all.
  const floorResult = results.get(floor)!;
  measuredRow("bare fastify → bare grpc-js over loopback, one process (tcp floor) ÷ fastify", floorResult, { m: b, target: 0 });
  rows.at(-1)!.target = "—";
  rows.at(-1)!.result = "";
  // The socket modes' target: at least as fast as that floor.
  for (const mode of ["unix", "tcp"] as const) {
    measuredRow(`ours, gateway ${mode} ÷ tcp floor`, results.get(targets[modes.indexOf(mode) + 1]!)!, { m: floorResult, target: 1.0 });
  }
  const p = results.get(peer)!;
  section(`Connect JSON unary POST ${ECHO_PATH} (application/json) — same wrk settings`);
  measuredRow("@connectrpc/connect-node, Connect protocol JSON (peer)", p);
  measuredRow(`ours, best gateway mode (${bestMode}) ÷ connect-node JSON`, best!, { m: p, target: 1.0 });
  await Promise.all([...ours, bare, peerServer, floor].map((s) => stop(s.child)));
}

function fileSize(file: string): number {
  return readFileSync(file).length;
}

/** What bench/sse-client.ts and bench/ws-client.ts print last: one JSON line of counts over the window. */
interface StreamClients {
  connected: number;
  connectMs: number;
  perSecond: number;
  errors: number;
  errorKinds: Record<string, number>;
}

/** The row of a many-clients stream run: messages delivered per second against what the clients were sent. */
function deliveredRow(what: string, r: StreamClients, cpuShare: number): void {
  const ideal = (r.connected * 1000) / SSE_INTERVAL_MS;
  rows.push({
    name: `  ${what}/s delivered (${r.connected}/${SSE_CLIENTS} connected in ${Math.round(r.connectMs)} ms; ratio to ${fmtRps(ideal)}/s sent)`,
    rps: fmtRps(r.perSecond),
    p50: "",
    p99: "",
    cpu: `${Math.round(cpuShare * 100)}% busy`,
    errors: String(r.errors),
    ratio: `${(r.perSecond / ideal).toFixed(2)}×`,
    target: "0 errors",
    result: r.errors === 0 && r.connected === SSE_CLIENTS ? "PASS" : "FAIL",
  });
}

async function sseGroup(): Promise<void> {
  const ours = await startService("ours: default configuration (SSE)");
  const urlPath = `/api/v1/countdown/1000?interval_ms=${SSE_INTERVAL_MS}`;
  progress(`SSE: ${SSE_CLIENTS} clients on ${urlPath} for ${SSE_SECONDS} s`);
  const cpu = cpuTime(ours.child.pid);
  const wall = performance.now();
  const out = await run(process.execPath, [
    "--import",
    "tsx",
    path.join(ROOT, "bench", "sse-client.ts"),
    `http://127.0.0.1:${ours.httpPort}${urlPath}`,
    String(SSE_CLIENTS),
    String(SSE_SECONDS),
  ]);
  const r = JSON.parse(out.trim().split("\n").at(-1)!) as StreamClients & { contentTypes: string[] };
  const cpuShare = (cpuTime(ours.child.pid) - cpu) / ((performance.now() - wall) * 1000);
  const sse = r.contentTypes.length === 1 && r.contentTypes[0]!.startsWith("text/event-stream");
  section(
    `SSE — ${SSE_CLIENTS} EventSource-style HTTP/1.1 clients on GET ${urlPath}, Accept: text/event-stream, ${SSE_SECONDS} s (gateway ${ours.ready?.gatewayMode})`,
  );
  deliveredRow("messages", r, cpuShare);
  if (!sse) notes.push(`SSE: the responses were ${r.contentTypes.join(", ")}, not text/event-stream; the stream was measured anyway.`);
  if (r.errors) notes.push(`SSE errors: ${JSON.stringify(r.errorKinds)}`);
  await stop(ours.child);
}

/** The browser protocols on the HTTP port against @connectrpc/connect-node serving the same ones. */
async function browserGroup(): Promise<void> {
  const service = await startService("ours: gRPC-Web and Connect on the HTTP port");
  const ours = { ...service, port: (service as Server & { httpPort: number }).httpPort };
  const peer = await startBench("@connectrpc/connect-node over HTTP/1.1", "connect.ts", "json");
  for (const s of [ours, peer]) {
    await checkHttp(s, ECHO_PATH);
    await checkGrpcWeb(s);
  }
  const connect = await measure([ours, peer], (s, seconds) => wrk(s, ECHO_PATH, seconds));
  const web = await measure([ours, peer], (s, seconds) => wrk(s, ECHO_PATH, seconds, GRPC_WEB_BODY));
  section(`Connect JSON unary POST ${ECHO_PATH} (application/json) — wrk ${wrkArgs(0, "", 0).slice(0, 4).join(" ")}`);
  measuredRow("@connectrpc/connect-node, Connect JSON (peer)", connect.get(peer)!);
  measuredRow("ours, Connect JSON through the full chain ÷ connect-node", connect.get(ours)!, { m: connect.get(peer)!, target: 1.0 });
  section(`gRPC-Web unary POST ${ECHO_PATH} (application/grpc-web+proto, ${fileSize(GRPC_BODY)}-byte frame) — same wrk settings`);
  measuredRow("@connectrpc/connect-node, gRPC-Web (peer)", web.get(peer)!);
  measuredRow("ours, gRPC-Web through the full chain ÷ connect-node", web.get(ours)!, { m: web.get(peer)!, target: 1.0 });
  await Promise.all([service, peer].map((s) => stop(s.child)));
}

/**
 * HTTP/2 on the HTTP port: Connect JSON unary over h2c against @connectrpc/connect-node over h2c (h2load, same
 * shape as the gRPC rows), and gRPC on the HTTP port with SINGLE_PORT=true against the same process's dedicated
 * gRPC port.
 */
async function http2Group(): Promise<void> {
  const service = await startService("ours: Connect on the HTTP port over HTTP/2 (h2c)");
  const ours = { ...service, port: service.httpPort };
  const peer = await startBench("@connectrpc/connect-node over HTTP/2 (h2c)", "connect.ts", "grpc");
  const connect = await measure([ours, peer], (s, seconds) => h2load(s, seconds, undefined, CONNECT_JSON_REQUEST));
  section(`Connect JSON unary POST ${ECHO_PATH} over HTTP/2 (h2c) — h2load ${h2loadArgs(0).slice(0, 6).join(" ")}`);
  measuredRow("@connectrpc/connect-node, Connect JSON over HTTP/2 (peer)", connect.get(peer)!);
  measuredRow("ours, Connect JSON over HTTP/2 through the full chain ÷ connect-node", connect.get(ours)!, {
    m: connect.get(peer)!,
    target: 1.0,
  });
  await Promise.all([service, peer].map((s) => stop(s.child)));

  const single = await startService("ours: SINGLE_PORT=true", { SINGLE_PORT: "true" });
  const dedicated = { ...single, name: "ours: the dedicated gRPC port" };
  const shared = { ...single, name: "ours: gRPC on the HTTP port (SINGLE_PORT=true)", port: single.httpPort };
  for (const s of [dedicated, shared]) await checkGrpc(s);
  const grpc = await measure([dedicated, shared], (s, seconds) => h2load(s, seconds));
  section(`gRPC unary Echo on the single port — h2load ${h2loadArgs(0).slice(0, 6).join(" ")}, one process serving both ports`);
  measuredRow("ours, the dedicated gRPC port (reference)", grpc.get(dedicated)!);
  measuredRow("ours, gRPC on the HTTP port (SINGLE_PORT=true) ÷ the dedicated port", grpc.get(shared)!, {
    m: grpc.get(dedicated)!,
    target: 0.9,
  });
  await stop(single.child);
}

/** WebSocket: SSE_CLIENTS concurrent bidi Chat streams, each client sending a message every 100 ms. */
async function wsGroup(): Promise<void> {
  const ours = await startService("ours: default configuration (WebSocket)");
  const method = `/${Service.typeName}/${Service.method.chat.name}`;
  const request = JSON.stringify({ text: "hello" });
  progress(`WebSocket: ${SSE_CLIENTS} bidi streams on ${method} for ${SSE_SECONDS} s`);
  const cpu = cpuTime(ours.child.pid);
  const wall = performance.now();
  const out = await run(process.execPath, [
    "--import",
    "tsx",
    path.join(ROOT, "bench", "ws-client.ts"),
    `ws://127.0.0.1:${ours.httpPort}${method}`,
    WS_PROTOCOL,
    request,
    String(SSE_CLIENTS),
    String(SSE_SECONDS),
    String(SSE_INTERVAL_MS),
  ]);
  const r = JSON.parse(out.trim().split("\n").at(-1)!) as StreamClients;
  const cpuShare = (cpuTime(ours.child.pid) - cpu) / ((performance.now() - wall) * 1000);
  section(
    `WebSocket — ${SSE_CLIENTS} concurrent bidi streams (one socket each) of ${method}, each client sending ${request} every ${SSE_INTERVAL_MS} ms, ${SSE_SECONDS} s`,
  );
  deliveredRow("answers", r, cpuShare);
  if (r.errors) notes.push(`WebSocket errors: ${JSON.stringify(r.errorKinds)}`);
  await stop(ours.child);
}

/** Start-up samples, gathered in batches spread over the bench (see main). */
const startup = { times: [] as number[], rss: [] as number[], own: [] as number[], cpu: [] as number[], check: [] as number[] };

/**
 * A fixed piece of work timed in the bench's process just before each start: 64 MiB of memory touched for the
 * first time, then a fixed loop. It moves when the machine does (this VM's host makes a first touch of a page
 * cost more at some moments, and charges it as CPU time), so a slow start-up row shows whether the machine was slow.
 */
function machineCheck(): number {
  const t0 = performance.now();
  Buffer.alloc(64 * 1024 * 1024).fill(1);
  let x = 0;
  for (let i = 0; i < 20_000_000; i++) x = (x + i * 7) % 1_000_003;
  if (x < 0) throw new Error("unreachable");
  return performance.now() - t0;
}

async function startupSamples(runs: number): Promise<void> {
  for (let i = 1; i <= runs; i++) {
    progress(`start-up ${startup.times.length + 1}/${STARTUP_RUNS}`);
    startup.check.push(machineCheck());
    const [grpcPort, httpPort] = [await freePort(), await freePort()];
    const env = { GRPC_PORT: String(grpcPort), HTTP_PORT: String(httpPort), GRPC_GRACEFUL_DURATION_IN_SECONDS: "0" };
    const t0 = performance.now();
    const { child, log } = launch("ours: start-up", [path.join(BENCH_DIST, "main.js")], env, false);
    await Promise.race([waitReady(httpPort), exited(child, log), timeout(30_000, "the service did not get ready")]);
    startup.times.push(performance.now() - t0);
    startup.cpu.push(cpuTime(child.pid) / 1000);
    const ready = await readyLine(log);
    if (typeof ready?.startup_ms === "number") startup.own.push(ready.startup_ms);
    await sleep(2000);
    const status = readFileSync(`/proc/${child.pid}/status`, "utf8");
    startup.rss.push(Number(/VmRSS:\s+(\d+) kB/.exec(status)?.[1]) / 1024);
    await stop(child);
  }
}

function startupRows(): void {
  const { times, rss, own, cpu, check } = startup;
  section(
    `Start-up of the compiled service (node ${BENCH_DIST}/main.js), ${times.length} runs in three batches (before the gRPC group, after the HTTP group, at the end): median (p50) and worst (p99 column)`,
  );
  const t = median(times);
  rows.push({
    name: "  spawn → first 200 from /readycheck (ms)",
    rps: "",
    p50: fmtMs(t),
    p99: fmtMs(Math.max(...times)),
    cpu: `${Math.round(median(cpu))} ms`,
    errors: "0",
    ratio: "",
    target: "≤ 300 ms",
    result: t <= 300 ? "PASS" : "FAIL",
  });
  const m = median(rss);
  rows.push({
    name: "  idle RSS 2 s after ready (MB)",
    rps: "",
    p50: m.toFixed(1),
    p99: Math.max(...rss).toFixed(1),
    errors: "0",
    ratio: "",
    target: "≤ 100 MB",
    result: m <= 100 ? "PASS" : "FAIL",
  });
  if (own.length) notes.push(`start-up: the service's own startup_ms (process start → ready, in its log) median ${median(own)} ms`);
  notes.push(
    `start-up: the cpu column is the CPU time the process used until ready (median); every run reads the compile cache the build left in ${BENCH_DIST}/.compile-cache, as the first start of a container from the image does`,
    `start-up: the machine check before each start (64 MiB touched, a fixed loop; in the bench's process) took ${fmtMs(median(check))} ms median, ${fmtMs(Math.min(...check))}-${fmtMs(Math.max(...check))} ms; per start: ${times.map((x, i) => `${Math.round(x)} ms after a ${Math.round(check[i]!)} ms check`).join(", ")}`,
  );
}

// ---------------------------------------------------------------------------------------------------

async function main(): Promise<void> {
  requireBenchInputs("bench");
  const header = machine(pin());
  process.stderr.write(`${header.join("\n")}\n\n`);
  const started = performance.now();
  const only = new Set((process.env.BENCH_ONLY ?? "grpc,streams,http,browser,http2,sse,ws,startup").split(","));
  // Start-up is sampled in three batches across the bench: one moment of a slow machine then moves a third
  // of the samples, not the median.
  const batch = Math.ceil(STARTUP_RUNS / 3);
  if (only.has("startup")) await startupSamples(batch);
  if (only.has("grpc")) await grpcGroup();
  if (only.has("streams")) await streamsGroup();
  if (only.has("http")) await httpGroup();
  if (only.has("startup")) await startupSamples(batch);
  if (only.has("browser")) await browserGroup();
  if (only.has("http2")) await http2Group();
  if (only.has("sse")) await sseGroup();
  if (only.has("ws")) await wsGroup();
  if (only.has("startup")) {
    await startupSamples(STARTUP_RUNS - 2 * batch);
    startupRows();
  }
  notes.push(
    "Servers log as a user runs them: the fixture service with the defaults (LOG_LEVEL=info, JSON, one response-time line per call), written to a file; the references do not log.",
    "errors: HTTP non-2xx, socket errors and timeouts seen by the load tool, plus gRPC calls the server did not answer OK (from its own counts).",
    `Whole bench: ${Math.round((performance.now() - started) / 1000)} s; load average at the end ${loadavg()}.`,
  );
  const table = printTable();
  process.stdout.write(`\n${header.join("\n")}\n\n${table}\n\n${notes.map((n) => `- ${n}`).join("\n")}\n`);
  if (process.env.BENCH_JSON) writeFileSync(process.env.BENCH_JSON, `${JSON.stringify({ machine: header, rows, notes }, null, 2)}\n`);
}

await runScript("bench", main);
