// Rapid reset (CVE-2023-44487) in waves, to see whether memory comes back after each: every wave, CONNECTIONS raw
// connections (node:net, frames written by hand, loopback only) each send STREAMS pairs of HEADERS + RST_STREAM
// (CANCEL) on grpc.health.v1.Health/Check as fast as the socket takes them, ignoring the stream limit, until the
// server ends the connection or the pairs run out. After each wave (and a pause), the service's RSS (/proc), V8's
// heap in use and committed, and external memory (/metrics) are sampled, and again every 5 s for RESET_SETTLE_S
// after the last wave. The fixture service runs from source under the deployment's heap cap. Bounded: WAVES ×
// CONNECTIONS × STREAMS streams at most.
//
//   node --import tsx bench/rapid-reset.ts [waves=8] [KEY=VALUE…]     # settings for the service
//   RESET_CONNECTIONS=8 RESET_STREAMS=10000 RESET_PAUSE_MS=1500 node --import tsx bench/rapid-reset.ts 8
//   RESET_PORT=http node --import tsx bench/rapid-reset.ts 8      # the HTTP port (h2c), GET /healthcheck
//
// Its figures are in BENCHMARKS.md ("Idle calls and cancels on the gRPC port").

import { setTimeout as pause } from "node:timers/promises";
import { deploymentNodeOptions } from "../test/framework/deploy-files.js";
import { rssOf } from "../test/framework/support/idle-streams.js";
import { newWaveCounts, resetFlood } from "../test/framework/support/rapid-reset.js";
import { FIXTURE_MAIN, killServiceProcesses, startServiceProcess } from "../test/framework/support/service-process.js";

const CONNECTIONS = Number(process.env.RESET_CONNECTIONS ?? 8);
const STREAMS = Number(process.env.RESET_STREAMS ?? 10_000);
const PAUSE_MS = Number(process.env.RESET_PAUSE_MS ?? 1500);
/** After the last wave, samples every 5 s for this long: does memory come back once the floods stop? */
const SETTLE_S = Number(process.env.RESET_SETTLE_S ?? 30);
const HEAP_CAP = process.env.RESET_NODE_OPTIONS ?? deploymentNodeOptions();
const ON_HTTP_PORT = process.env.RESET_PORT === "http";

async function metricsOf(httpPort: number): Promise<Record<string, number>> {
  const text = await (await fetch(`http://127.0.0.1:${httpPort}/metrics`)).text();
  const value = (name: string) => Number(new RegExp(`^${name} (\\S+)$`, "m").exec(text)?.[1] ?? Number.NaN);
  const space = (name: string) =>
    Number(new RegExp(`^nodejs_heap_space_size_total_bytes\\{space="${name}"\\} (\\S+)$`, "m").exec(text)?.[1] ?? Number.NaN) / 2 ** 20;
  return {
    oldSpaceMb: space("old"),
    newSpaceMb: space("new"),
    heapUsedMb: value("nodejs_heap_size_used_bytes") / 2 ** 20,
    heapTotalMb: value("nodejs_heap_size_total_bytes") / 2 ** 20,
    externalMb: value("nodejs_external_memory_bytes") / 2 ** 20,
  };
}

const args = process.argv.slice(2);
const waves = Number(args.find((a) => /^\d+$/.test(a)) ?? 8);
const settings = Object.fromEntries(args.filter((a) => a.includes("=")).map((a) => a.split("=", 2) as [string, string]));
const service = startServiceProcess(FIXTURE_MAIN, { NODE_OPTIONS: HEAP_CAP, ...settings });
let exited = false;
service.finished.then(() => (exited = true));
try {
  const { grpcPort, httpPort } = (await service.waitForLog("ready", (l) => l.msg === "ready")) as { grpcPort: number; httpPort: number };
  const pid = service.child.pid!;
  const sample = async () => {
    const m = await metricsOf(httpPort);
    const { rssMb } = await rssOf(pid);
    return Object.fromEntries(Object.entries({ rssMb, ...m }).map(([k, v]) => [k, Math.round(v)]));
  };
  await pause(PAUSE_MS);
  const rows: Record<string, unknown>[] = [{ wave: 0, ...(await sample()) }];
  console.log(JSON.stringify(rows[0]));
  for (let wave = 1; wave <= waves && !exited; wave++) {
    const counts = newWaveCounts();
    const started = performance.now();
    await Promise.all(
      Array.from({ length: CONNECTIONS }, () => resetFlood(ON_HTTP_PORT ? httpPort : grpcPort, STREAMS, counts, ON_HTTP_PORT)),
    );
    const seconds = (performance.now() - started) / 1000;
    const peak = (await rssOf(pid)).rssMb;
    await pause(PAUSE_MS);
    const row = { wave, seconds: Math.round(seconds * 10) / 10, ...counts, rssAtEndMb: Math.round(peak), ...(await sample()) };
    rows.push(row);
    console.log(JSON.stringify(row));
  }
  for (let s = 5; s <= SETTLE_S && !exited; s += 5) {
    await pause(5000);
    console.log(JSON.stringify({ settled: s, ...(await sample()) }));
  }
  const { peakMb } = await rssOf(pid);
  console.log(
    JSON.stringify({
      port: ON_HTTP_PORT ? "http" : "grpc",
      settings,
      connections: CONNECTIONS,
      streams: STREAMS,
      up: !exited,
      peakRssMb: Math.round(peakMb),
    }),
  );
} finally {
  if (exited) console.log(`the service died:\n${service.stderr().slice(-2000)}`);
  await killServiceProcesses();
}
