// `make soak`: the compiled fixture service (dist-bench/main.js, see bench/proto.ts) under mixed load for a while — gRPC Echo with h2load and
// POST /api/v1/echo with wrk, both at once, as fast as they go — then: failed requests (seen by the load
// tools and by the service's own /metrics), the status counts, the requests/s reached and the process's RSS
// at the start, middle and end, with a verdict on growth.
//
// The load runs SOAK_WARMUP_SECONDS then SOAK_SECONDS without a break; the RSS verdict looks only at the second
// part (V8 keeps growing its heap for the first half-minute or so of load).
//
// Tunables (environment): SOAK_SECONDS (60), SOAK_WARMUP_SECONDS (30), SOAK_GATEWAY_MODE (tcp | unix | in-process; unset: the
// service's default), SOAK_RSS_TOLERANCE (0.1: the last third's RSS floor may be 10 % above the middle third's).

import { spawnSync } from "node:child_process";
import { readFileSync } from "node:fs";
import {
  BENCH_DIST,
  CPUS,
  checkGrpc,
  checkHttp,
  firstLine,
  GRPC_BODY,
  H2_SHAPES,
  type H2Shape,
  HTTP_BODY,
  h2loadArgs,
  h2loadRate,
  httpGet,
  loadavg,
  num,
  pkgVersion,
  progress,
  ROOT,
  requireBenchInputs,
  run,
  runScript,
  startService,
  stop,
  WRK_CONNECTIONS,
  wrkArgs,
} from "./lib.js";

const SECONDS = Math.round(num("SOAK_SECONDS", 60));
const WARMUP = Math.round(num("SOAK_WARMUP_SECONDS", 30));
const TOTAL = WARMUP + SECONDS;
const RSS_TOLERANCE = num("SOAK_RSS_TOLERANCE", 0.1);
const GATEWAY_MODE = process.env.SOAK_GATEWAY_MODE;
const TARGET_RPS = 10_000;
const ECHO_ROUTE = "/api/v1/echo";
/** h2load as in make bench's first gRPC unary shape (the soak's h2load uses h2loadArgs' default). */
const [SHAPE] = H2_SHAPES as [H2Shape];

/** The process's resident set size in MB (Linux /proc). */
function rssMb(pid: number): number {
  const status = readFileSync(`/proc/${pid}/status`, "utf8");
  return Number(/VmRSS:\s+(\d+) kB/.exec(status)?.[1]) / 1024;
}

/** Sums of a counter's series by one label, e.g. grpc_server_handled_total by grpc_code. */
function countsBy(metrics: string, family: string, label: string): Map<string, number> {
  const counts = new Map<string, number>();
  const labelRe = new RegExp(`${label}="([^"]*)"`);
  for (const line of metrics.split("\n")) {
    if (!line.startsWith(`${family}{`)) continue;
    const key = labelRe.exec(line)?.[1] ?? "?";
    counts.set(key, (counts.get(key) ?? 0) + Number(line.slice(line.lastIndexOf(" ") + 1)));
  }
  return counts;
}

/** after − before, per key, leaving out keys that did not move. */
function delta(before: Map<string, number>, after: Map<string, number>): Map<string, number> {
  const d = new Map<string, number>();
  for (const [k, v] of after) if (v - (before.get(k) ?? 0) !== 0) d.set(k, v - (before.get(k) ?? 0));
  return d;
}

/** Whether the build included uncommitted source changes. */
const sourceModified = () =>
  spawnSync("git", ["-C", ROOT, "status", "--porcelain", "--", "src"], { encoding: "utf8" }).stdout?.trim() !== "";

const fmt = (n: number) => Math.round(n).toLocaleString("en-US");
const list = (m: Map<string, number>) => [...m].map(([k, v]) => `${k} ${fmt(v)}`).join(", ") || "none";

async function main(): Promise<void> {
  requireBenchInputs("soak");

  const service = await startService("soak", GATEWAY_MODE ? { GATEWAY_MODE } : {});
  const pid = service.child.pid!;
  await checkGrpc(service);
  await checkHttp({ ...service, port: service.httpPort }, ECHO_ROUTE);
  const metricsBefore = await httpGet(service.httpPort, "/metrics");
  const header = [
    `cpu:      ${firstLine("sh", ["-c", "grep -m1 'model name' /proc/cpuinfo | cut -d: -f2"])}, ${CPUS} CPUs; load average ${loadavg()} at the start`,
    `node:     ${process.version}; @grpc/grpc-js ${pkgVersion("@grpc/grpc-js")}, fastify ${pkgVersion("fastify")}`,
    `tools:    ${firstLine("h2load", ["--version"])}; ${firstLine("wrk", ["-v"])}`,
    `commit:   ${firstLine("git", ["-C", ROOT, "rev-parse", "--short", "HEAD"])}${sourceModified() ? " (src modified)" : ""}`,
    `service:  node ${BENCH_DIST}/main.js (the fixture service), default settings${GATEWAY_MODE ? ` but GATEWAY_MODE=${GATEWAY_MODE}` : ""} (gateway ${service.ready?.gatewayMode}), logs to a file`,
    `load:     ${WARMUP} s warm-up + ${SECONDS} s, at once: h2load -c ${SHAPE.clients} -m ${SHAPE.streams} gRPC Echo (${readFileSync(GRPC_BODY).length}-byte frame) and wrk -c ${WRK_CONNECTIONS} POST ${ECHO_ROUTE} (${HTTP_BODY.length}-byte JSON)`,
  ];
  process.stderr.write(`${header.join("\n")}\n`);

  // RSS once a second; the first sample is the idle process before any load.
  const rss: { at: number; mb: number }[] = [{ at: 0, mb: rssMb(pid) }];
  const started = performance.now();
  const sampler = setInterval(() => {
    const at = (performance.now() - started) / 1000;
    rss.push({ at, mb: rssMb(pid) });
    if (Math.round(at) % 10 === 0) progress(`${Math.round(at)} s: RSS ${rssMb(pid).toFixed(1)} MB`);
  }, 1000);
  const [h2Out, wrkOut] = await Promise.all([
    run("h2load", ["-D", String(TOTAL), ...h2loadArgs(service.port)]),
    run("wrk", wrkArgs(service.httpPort, ECHO_ROUTE, TOTAL), { ...process.env, BENCH_BODY: HTTP_BODY }),
  ]).finally(() => clearInterval(sampler));
  const rssAfter = rssMb(pid);
  const metricsAfter = await httpGet(service.httpPort, "/metrics");
  await stop(service.child);

  // What the load tools saw.
  const h2 = /requests: (\d+) total, (\d+) started, (\d+) done, (\d+) succeeded, (\d+) failed, (\d+) errored, (\d+) timeout/.exec(h2Out);
  if (!h2) throw new Error(`h2load output not understood:\n${h2Out}`);
  const [, , h2Done, h2Ok, h2Failed, h2Errored, h2Timeout] = h2.slice(1).map(Number) as number[];
  const wrkLine = wrkOut.split("\n").find((l) => l.startsWith("BENCH "));
  if (!wrkLine) throw new Error(`wrk output not understood:\n${wrkOut}`);
  const w = JSON.parse(wrkLine.slice(6)) as Record<string, number>;
  const wrkErrors = w.connect! + w.read! + w.write! + w.status! + w.timeout!;
  const grpcRps = h2loadRate(h2Out);
  const httpRps = w.requests! / (w.duration_us! / 1e6);

  // What the service counted (HTTP calls go through the gateway, so they count as gRPC calls too).
  const codes = delta(
    countsBy(metricsBefore, "grpc_server_handled_total", "grpc_code"),
    countsBy(metricsAfter, "grpc_server_handled_total", "grpc_code"),
  );
  const httpStatuses = delta(
    countsBy(metricsBefore, "http_server_requests_total", "status_code"),
    countsBy(metricsAfter, "http_server_requests_total", "status_code"),
  );
  // Calls still running when the tools stop are abandoned (CANCELLED, HTTP 499): at most one per stream or
  // connection in use is the tools' doing; more would be the service's.
  const inUse = SHAPE.clients * SHAPE.streams + WRK_CONNECTIONS;
  const notOk = [...codes].filter(([code]) => code !== "OK" && code !== "CANCELLED").reduce((a, [, n]) => a + n, 0);
  const cancelledBeyond = Math.max(0, (codes.get("CANCELLED") ?? 0) - inUse);
  const closedBeyond = Math.max(0, (httpStatuses.get("499") ?? 0) - WRK_CONNECTIONS);
  const failed = h2Failed! + h2Errored! + h2Timeout! + wrkErrors + notOk + cancelledBeyond + closedBeyond;

  // RSS: single samples, then the verdict on floors. Between collections the heap climbs and drops by tens of
  // MB over tens of seconds, so single samples or averages wander; the lowest sample of a stretch (just after a
  // collection) tracks what stays alive, and a leak lifts it.
  /** The sample nearest `fraction` of the way through the soak (after the warm-up). */
  const sampleAt = (fraction: number) => {
    const t = WARMUP + fraction * SECONDS;
    return rss.reduce((best, s) => (Math.abs(s.at - t) < Math.abs(best.at - t) ? s : best));
  };
  const floor = (from: number, to: number) =>
    Math.min(...rss.filter((s) => s.at >= WARMUP + from * SECONDS && s.at <= WARMUP + to * SECONDS).map((s) => s.mb));
  const middle = floor(1 / 3, 2 / 3);
  const end = floor(2 / 3, 1);
  const growth = (end - middle) / middle;
  // Samples are a second apart: a soak of a few seconds leaves a third without one, and nothing to compare.
  const judged = Number.isFinite(middle) && Number.isFinite(end);
  const verdict = !judged ? "not judged" : growth <= RSS_TOLERANCE ? "no growth trend" : "GROWING";
  const trend = judged
    ? `lowest in the soak's last third ${end.toFixed(1)} vs in its middle third ${middle.toFixed(1)}: ${growth >= 0 ? "+" : ""}${(growth * 100).toFixed(1)} % → ${verdict} (tolerance ${(RSS_TOLERANCE * 100).toFixed(0)} %)`
    : `${verdict}: a third of the ${SECONDS} s soak has no RSS sample (one a second); SOAK_SECONDS of 6 or more gives each third some`;

  const lines = [
    ...header,
    "",
    `failed requests:    ${fmt(failed)}${failed === 0 ? "" : "  ← FAIL"}`,
    `  h2load (gRPC):    ${fmt(h2Done!)} done, ${fmt(h2Ok!)} succeeded, ${h2Failed} failed, ${h2Errored} errored, ${h2Timeout} timeout`,
    `  wrk (HTTP):       ${fmt(w.requests!)} requests; errors: connect ${w.connect}, read ${w.read}, write ${w.write}, non-2xx ${w.status}, timeout ${w.timeout}`,
    `  service, gRPC:    grpc_server_handled_total by grpc_code: ${list(codes)} (gRPC and gateway calls)${codes.has("CANCELLED") ? `; CANCELLED up to ${inUse} are calls the tools left when they stopped` : ""}`,
    `  service, HTTP:    http_server_requests_total by status_code: ${list(httpStatuses)}${httpStatuses.has("499") ? ` (499 up to ${WRK_CONNECTIONS}: requests wrk left when it stopped)` : ""}`,
    `requests/s:         ${fmt(grpcRps + httpRps)} combined (gRPC ${fmt(grpcRps)} + HTTP ${fmt(httpRps)}); target ≥ ${fmt(TARGET_RPS)}: ${grpcRps + httpRps >= TARGET_RPS ? "met" : "not met"}`,
    `RSS (MB):           start ${rss[0]!.mb.toFixed(1)} (idle), after warm-up ${sampleAt(0).mb.toFixed(1)} (${Math.round(sampleAt(0).at)} s), middle ${sampleAt(0.5).mb.toFixed(1)} (${Math.round(sampleAt(0.5).at)} s), end ${sampleAt(1).mb.toFixed(1)} (${Math.round(sampleAt(1).at)} s), after the load ${rssAfter.toFixed(1)}`,
    `RSS trend:          ${trend}`,
    `load average at the end: ${loadavg()}`,
  ];
  process.stdout.write(`\n${lines.join("\n")}\n`);
  if (failed > 0 || verdict === "GROWING") process.exitCode = 1;
}

await runScript("soak", main);
