// `make bench`'s overload rows (SPEC §4.13, §5): what the service does when offered twice what it can serve.
//
// For each method (BENCH_OVERLOAD_WORK_US, default "500,0"): Echo whose handler keeps the CPU busy that many µs
// (the fixture's work_us: a handler that does work, the main row), and the bare Echo (0: a handler that does
// nothing, pure protocol cost, where refusing a call costs a fifth of serving one and so caps what shedding
// can save, see BENCHMARKS.md):
//   1. capacity: the most OK calls/s the service serves, by h2load's closed loop (-c16 -m8) against the service
//      with protection off, as the server counted them (or BENCH_OVERLOAD_CAPACITY, a list in the same order);
//   2. with overload protection on (the defaults), then off: open-loop load (bench/open-loop.ts: calls arrive at
//      a fixed rate, each with a 2 s deadline) at half the capacity for BENCH_OVERLOAD_HALF_SECONDS (10), the
//      reference p99; then at twice the capacity for BENCH_OVERLOAD_SECONDS (20): goodput (OK calls/s), the p99
//      of the OK calls, how many were refused (UNAVAILABLE), expired or never answered.
// Targets with protection on: goodput ≥ 0.8× capacity, p99 of the accepted calls ≤ 3× the p99 at half load.
// BENCH_OVERLOAD_MODES=on runs protection on only; OVERLOAD_* settings in the environment apply to it. The service runs pinned to CPU 0 and this script (the
// generator) to CPU 1, as in `make bench`.
//
//   node --import tsx bench/overload.ts            # after `node --import tsx bench/build.ts` (make bench does)

import { writeFileSync } from "node:fs";
import path from "node:path";
import { create, toBinary } from "@bufbuild/protobuf";
import {
  checkGrpc,
  GRPC_REQUEST,
  h2load,
  loadavg,
  machine,
  num,
  pin,
  progress,
  requireBenchInputs,
  runScript,
  type Server,
  startService,
  stop,
  MESSAGE,
  tmp,
} from "./lib.js";
import { type OpenLoopResult, openLoop } from "./open-loop.js";
import { EchoRequestSchema } from "./proto.js";

const SECONDS = num("BENCH_OVERLOAD_SECONDS", 20);
const HALF_SECONDS = num("BENCH_OVERLOAD_HALF_SECONDS", 10);
const WARMUP_SECONDS = num("BENCH_WARMUP", 3);
const WORK_US = (process.env.BENCH_OVERLOAD_WORK_US ?? "500,0").split(",").map(Number);
const CAPACITIES = (process.env.BENCH_OVERLOAD_CAPACITY ?? "").split(",").filter(Boolean).map(Number);
const MODES = (process.env.BENCH_OVERLOAD_MODES ?? "on,off").split(",");
/** The protection-on run's settings: the defaults, or the OVERLOAD_* and MAX_IN_FLIGHT_CALLS of this shell (to try others). */
const ON = Object.fromEntries(
  Object.entries(process.env).filter((e): e is [string, string] => /^(?:OVERLOAD_|MAX_IN_FLIGHT_CALLS$)/.test(e[0]) && e[1] !== undefined),
);
const OFF = { OVERLOAD_MAX_EVENT_LOOP_DELAY_MS: "0", OVERLOAD_MAX_EVENT_LOOP_UTILIZATION: "0", MAX_IN_FLIGHT_CALLS: "0" };

/** `grpc_server_shed_total` by reason, and the peak RSS (MB) so far, from the service. */
async function serverFigures(s: Server & { httpPort: number }): Promise<{ shed: string; rssMb: number }> {
  const text = await (await fetch(`http://127.0.0.1:${s.httpPort}/metrics`)).text();
  const shed = text
    .split("\n")
    .filter((l) => l.startsWith("grpc_server_shed_total{"))
    .map((l) => `${/reason="([^"]+)"/.exec(l)?.[1]} ${l.slice(l.lastIndexOf(" ") + 1)}`)
    .join(", ");
  const { readFileSync } = await import("node:fs");
  const hwm = /VmHWM:\s+(\d+) kB/.exec(readFileSync(`/proc/${s.child.pid}/status`, "utf8"))?.[1];
  return { shed: shed || "not counted (protection off)", rssMb: Math.round(Number(hwm) / 1024) };
}

/** Samples the service's event-loop gauges every 200 ms while a phase runs: mean and max of the delay (ms) and utilisation. */
function watchLoop(s: Server & { httpPort: number }): () => string {
  const delays: number[] = [];
  const elus: number[] = [];
  const timer = setInterval(async () => {
    const text = await (await fetch(`http://127.0.0.1:${s.httpPort}/metrics`).catch(() => undefined))?.text().catch(() => undefined);
    const value = (name: string) => Number(new RegExp(`^${name} (\\S+)$`, "m").exec(text ?? "")?.[1]);
    const d = value("grpc_server_event_loop_delay_seconds");
    const u = value("grpc_server_event_loop_utilization");
    if (Number.isFinite(d)) delays.push(d * 1000);
    if (Number.isFinite(u)) elus.push(u);
  }, 200);
  return () => {
    clearInterval(timer);
    if (delays.length === 0) return "event loop not sampled";
    const mean = (xs: number[]) => xs.reduce((a, b) => a + b, 0) / xs.length;
    return `event loop: delay mean ${mean(delays).toFixed(1)} ms, max ${Math.max(...delays).toFixed(1)} ms; utilisation mean ${mean(elus).toFixed(2)}, max ${Math.max(...elus).toFixed(2)} (${delays.length} samples)`;
  };
}

/** The gRPC frame of an Echo whose handler works `workUs` µs (flag 0, big-endian length, the message), in a file. */
function echoFrame(workUs: number): string {
  const message = toBinary(EchoRequestSchema, create(EchoRequestSchema, { message: MESSAGE, workUs }));
  const frame = Buffer.alloc(5 + message.length);
  frame.writeUInt32BE(message.length, 1);
  frame.set(message, 5);
  const file = path.join(tmp, `echo-work-${workUs}.grpc`);
  writeFileSync(file, frame);
  return file;
}

const fmt = (r: OpenLoopResult): string =>
  `offered ${Math.round(r.offered)}/s, goodput ${Math.round(r.goodput)}/s, p50 ${r.p50.toFixed(2)} ms, p99 ${r.p99.toFixed(2)} ms, max ${r.max.toFixed(0)} ms; ` +
  `sent ${r.sent}: OK ${r.ok}, UNAVAILABLE ${r.unavailable}, DEADLINE_EXCEEDED ${r.deadlineExceeded}, other ${r.otherErrors}, unanswered ${r.unfinished}`;

async function mode(name: string, env: Record<string, string>, capacity: number, body: string) {
  const s = await startService(`overload-${name}`, env);
  try {
    await checkGrpc(s);
    progress(`${name}: warm-up ${WARMUP_SECONDS} s at half capacity`);
    await openLoop({ port: s.port, rate: capacity / 2, seconds: WARMUP_SECONDS, body });
    let watch = watchLoop(s);
    const half = await openLoop({ port: s.port, rate: capacity / 2, seconds: HALF_SECONDS, body });
    const halfLoop = watch();
    progress(`${name}: half load: ${fmt(half)}; ${halfLoop}`);
    watch = watchLoop(s);
    const double = await openLoop({ port: s.port, rate: capacity * 2, seconds: SECONDS, body });
    const doubleLoop = watch();
    progress(`${name}: 2× load: ${fmt(double)}; ${doubleLoop}`);
    progress(
      `${name}: 2× load, each second (OK/refused/p99 ms): ${double.timeline.map((t) => `${t.ok}/${t.refused}/${t.p99.toFixed(0)}`).join(" ")}`,
    );
    progress(
      `${name}: 2× load, its first second by tenths (OK/refused/max ms): ${double.firstSecond.map((t) => `${t.ok}/${t.refused}/${t.max.toFixed(0)}`).join(" ")}`,
    );
    return { half, double, halfLoop, doubleLoop, ...(await serverFigures(s)) };
  } finally {
    await stop(s.child);
  }
}

type Mode = Awaited<ReturnType<typeof mode>>;

/** Capacity, then protection on and off, for Echo with `workUs` µs of work per call; the table's lines and notes. */
async function method(workUs: number, given: number | undefined): Promise<{ lines: string[]; notes: string[] }> {
  const body = echoFrame(workUs);
  const label = workUs > 0 ? `Echo, ${workUs} µs of CPU work per call` : "Echo, no work (protocol cost only)";
  let capacity: number;
  let capacityLoop = "given";
  if (given !== undefined && given > 0) capacity = given;
  else {
    const ref = await startService("overload-capacity", { ...OFF, OVERLOAD_MAX_EVENT_LOOP_DELAY_MS: "1000000" });
    const request = { ...GRPC_REQUEST, body };
    try {
      await checkGrpc(ref);
      await h2load(ref, WARMUP_SECONDS, undefined, request);
      const before = (await ref.counts())!.ok;
      const t0 = performance.now();
      const watch = watchLoop(ref);
      await h2load(ref, 10, undefined, request);
      capacityLoop = watch();
      capacity = ((await ref.counts())!.ok - before) / ((performance.now() - t0) / 1000);
    } finally {
      await stop(ref.child);
    }
  }
  progress(`${label}: capacity (h2load -c16 -m8, 10 s, protection off): ${Math.round(capacity)} OK calls/s; ${capacityLoop}`);
  const modes: [string, Mode][] = [];
  if (MODES.includes("on")) modes.push(["on", await mode(`${label}, protection on`, ON, capacity, body)]);
  // Off, but the event loop still sampled (thresholds never reached), for its figures.
  if (MODES.includes("off"))
    modes.push(["off", await mode(`${label}, protection off`, { ...OFF, OVERLOAD_MAX_EVENT_LOOP_DELAY_MS: "1000000" }, capacity, body)]);
  const lines = [
    `${label}: capacity ${Math.round(capacity)} OK calls/s (h2load -c16 -m8, 10 s, protection off)`,
    "",
    "| protection | load | offered/s | goodput/s | × capacity | p99 ms (OK calls) | × p99 at half load | refused | expired | unanswered | peak RSS MB | result |",
    "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|",
  ];
  const notes = [`${label}: at capacity (closed loop): ${capacityLoop}`];
  for (const [name, m] of modes) {
    const g = m.double.goodput / capacity;
    const p = m.double.p99 / m.half.p99;
    const pass = g >= 0.8 && p <= 3;
    lines.push(
      `| ${name} | 0.5× | ${Math.round(m.half.offered)} | ${Math.round(m.half.goodput)} | ${(m.half.goodput / capacity).toFixed(2)} | ${m.half.p99.toFixed(2)} | 1 | ${m.half.unavailable} | ${m.half.deadlineExceeded} | ${m.half.unfinished} | | |`,
      `| ${name} | 2× | ${Math.round(m.double.offered)} | ${Math.round(m.double.goodput)} | ${g.toFixed(2)} | ${m.double.p99.toFixed(2)} | ${p.toFixed(1)} | ${m.double.unavailable} | ${m.double.deadlineExceeded} | ${m.double.unfinished + m.double.otherErrors} | ${m.rssMb} | ${name === "on" ? (pass ? "PASS" : "FAIL") : pass ? "(meets the targets without protection)" : "(misses them: what protection prevents)"} |`,
    );
    notes.push(
      `${label}, ${name}: shed by the service (grpc_server_shed_total): ${m.shed}`,
      `${label}, ${name}: half load: ${m.halfLoop}; 2×: ${m.doubleLoop}`,
    );
    if (m.double.offered < capacity * 2 * 0.95)
      notes.push(
        `${label}, ${name}: the generator offered only ${Math.round(m.double.offered)}/s of the ${Math.round(capacity * 2)}/s asked`,
      );
  }
  return { lines, notes };
}

async function main(): Promise<void> {
  requireBenchInputs("bench");
  const header = machine(pin());
  process.stderr.write(`${header.join("\n")}\n\n`);
  const lines: string[] = [];
  const notes: string[] = [];
  for (const [i, workUs] of WORK_US.entries()) {
    const r = await method(workUs, CAPACITIES[i]);
    lines.push(...r.lines, "");
    notes.push(...r.notes);
  }
  notes.push(
    "targets (protection on): goodput ≥ 0.8× capacity, p99 of OK calls ≤ 3× the p99 at half load; each call has a 2 s deadline",
    "load generator: bench/open-loop.ts, 16 HTTP/2 connections, calls at a fixed rate (open loop), latency from each call's due time",
    `load average at the end: ${loadavg()}`,
  );
  process.stdout.write(`\n${header.join("\n")}\n\n${lines.join("\n")}\n${notes.map((n) => `- ${n}`).join("\n")}\n`);
}

await runScript("overload", main);
