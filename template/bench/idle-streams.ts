// The idle-stream check at full size: 16 connections × 10,000 calls on grpc.health.v1.Health/Check that
// send headers and never a message, from an attacker's client (raw frames, ignoring the stream limit) and from
// Node's own HTTP/2 client (honouring it, the rest queued on its side), against the fixture service under the
// deployment's heap cap. Passes when the process stays up, its RSS stays under 300 MB, /healthcheck and an Echo
// answer within 1 s throughout, and the held calls are ended by GRPC_FIRST_MESSAGE_TIMEOUT_SECONDS.
//
//   node --import tsx bench/idle-streams.ts [seconds=25] [KEY=VALUE…]    # settings for the service, e.g.
//   node --import tsx bench/idle-streams.ts 25 GRPC_MAX_CONCURRENT_STREAMS=10000 GRPC_FIRST_MESSAGE_TIMEOUT_SECONDS=0 GRPC_MAX_CONNECTIONS=0
//
// The service runs from source (tsx), as `make test-framework` runs it. Its figures are in BENCHMARKS.md.

import { fork } from "node:child_process";
import { once } from "node:events";
import { setTimeout as pause } from "node:timers/promises";
import { createClient } from "../src/framework/index.js";
import { deploymentNodeOptions } from "../test/framework/deploy-files.js";
import { holdHttp2, holdRaw, rssOf } from "../test/framework/support/idle-streams.js";
import { FIXTURE_MAIN, killServiceProcesses, startServiceProcess } from "../test/framework/support/service-process.js";
import { FixtureService } from "../test/gen/fixture/v1/fixture_pb.js";

const CONNECTIONS = Number(process.env.IDLE_CONNECTIONS ?? 16);
const STREAMS = Number(process.env.IDLE_STREAMS ?? 10_000);
/** IDLE_CLIENTS=node leaves out the raw client (to measure what the connections the server accepts cost). */
const CLIENTS = process.env.IDLE_CLIENTS ?? "raw,node";
const HEAP_CAP = deploymentNodeOptions();
const RSS_LIMIT_MB = 300;
const ANSWER_LIMIT_MS = 1000;
const PROBE_INTERVAL_MS = 250;

const args = process.argv.slice(2);

// The attacking clients run in a process of their own, so the probes' latencies are the service's alone.
if (args[0] === "--attack") {
  const port = Number(args[1]);
  const raw = await holdRaw(port, CONNECTIONS, STREAMS);
  const node = holdHttp2(port, CONNECTIONS, STREAMS);
  process.send!({ started: true });
  process.on("message", () => {
    process.send!({ raw: raw.counts, node: node.counts });
    raw.close();
    node.close();
    process.disconnect();
  });
} else await main();

async function main(): Promise<void> {
  const seconds = Number(args.find((a) => /^\d+$/.test(a)) ?? 25);
  const settings = Object.fromEntries(args.filter((a) => a.includes("=")).map((a) => a.split("=", 2) as [string, string]));

  const service = startServiceProcess(FIXTURE_MAIN, { NODE_OPTIONS: HEAP_CAP, ...settings });
  let exitedEarly = false;
  service.finished.then(() => (exitedEarly = true));
  const { grpcPort, httpPort } = (await service.waitForLog("ready", (l) => l.msg === "ready")) as { grpcPort: number; httpPort: number };

  const pid = service.child.pid!;
  const baseline = await rssOf(pid);
  const client = createClient(FixtureService, `127.0.0.1:${grpcPort}`, { maxAttempts: 1 });
  await client.echo({ message: "warm" });

  const attacker = fork(import.meta.filename, ["--attack", String(grpcPort)], { execArgv: ["--import", "tsx"] });
  await once(attacker, "message");
  const started = Date.now();

  let maxRss = 0;
  let maxHealthMs = 0;
  let maxEchoMs = 0;
  let probes = 0;
  let failures = 0;
  while (Date.now() - started < seconds * 1000 && !exitedEarly) {
    const t0 = performance.now();
    const health = fetch(`http://127.0.0.1:${httpPort}/healthcheck`, { signal: AbortSignal.timeout(5000) }).then(
      (r) => {
        maxHealthMs = Math.max(maxHealthMs, performance.now() - t0);
        return r.status === 200;
      },
      () => false,
    );
    const echo = client.echo({ message: "probe" }, { deadline: Date.now() + 5000 }).then(
      () => {
        maxEchoMs = Math.max(maxEchoMs, performance.now() - t0);
        return true;
      },
      () => false,
    );
    const [h, e] = await Promise.all([health, echo]);
    probes++;
    if (!h || !e) failures++;
    maxRss = Math.max(maxRss, (await rssOf(pid).catch(() => undefined))?.rssMb ?? 0);
    await pause(PROBE_INTERVAL_MS);
  }
  const peak = await rssOf(pid).catch(() => undefined);
  attacker.send("stop");
  const [counts] = (await once(attacker, "message")) as [{ raw: unknown; node: unknown }];
  await once(attacker, "exit");
  client.close();
  const up = !exitedEarly;
  await killServiceProcesses();

  const figures = {
    settings,
    seconds,
    up,
    baselineRssMb: Math.round(baseline.rssMb),
    maxRssMb: Math.round(maxRss),
    peakRssMb: peak ? Math.round(peak.peakMb) : undefined,
    probes,
    failedProbes: failures,
    maxHealthcheckMs: Math.round(maxHealthMs),
    maxEchoMs: Math.round(maxEchoMs),
    attack: counts,
  };
  console.log(JSON.stringify(figures, null, 2));
  if (!up) console.log(`the service died:\n${service.stderr().slice(-2000)}`);
  const pass =
    up && (peak?.peakMb ?? Number.POSITIVE_INFINITY) < RSS_LIMIT_MB && failures === 0 && Math.max(maxHealthMs, maxEchoMs) < ANSWER_LIMIT_MS;
  console.log(pass ? "PASS" : "FAIL");
  process.exitCode = pass ? 0 : 1;
}
