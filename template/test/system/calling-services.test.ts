/**
 * Calling another service, with real processes: service A (test/system/fixtures/caller-main.ts)
 * calls service B (dependency-main.ts) through app.createClient.
 * - B fails every call: A's attempts to B stay ≤ 1.2× A's calls; once the breaker opens A answers UNAVAILABLE in
 *   milliseconds without calling B (B's own metrics say so); B recovers and A's calls succeed again within seconds;
 *   A's client metrics show attempts, retries and local rejections.
 * - B as three replicas behind one name (a private /etc/hosts in a mount namespace: 127.0.0.2–4, one port):
 *   round_robin over dns:/// spreads A's calls over them, and hedging Echo (NO_SIDE_EFFECTS) cuts A's p99 when
 *   the first replica is slow. The figures are printed.
 * Needs root for the mount namespace (CI runs as root), or passwordless sudo.
 */
import assert from "node:assert/strict";
import { once } from "node:events";
import fs from "node:fs";
import { createServer } from "node:net";
import os from "node:os";
import path from "node:path";
import { after, test } from "node:test";
import { Code, createClient } from "../../src/framework/index.js";
import { handled } from "../framework/support/metrics.js";
import { killServiceProcesses, type ServiceProcess, startServiceProcess } from "../framework/support/service-process.js";
import { FixtureService } from "../gen/fixture/v1/fixture_pb.js";

after(killServiceProcesses);

const CALLER = "test/system/fixtures/caller-main.ts";
const DEPENDENCY = "test/system/fixtures/dependency-main.ts";

interface Started {
  process: ServiceProcess;
  grpcAddress: string;
  httpUrl: string;
}

async function start(entry: string, settings: Record<string, string>, wrap?: (argv: string[]) => string[]): Promise<Started> {
  const service = startServiceProcess(entry, { LOG_LEVEL: "info", ...settings }, { wrap });
  const ready = (await service.waitForLog("ready", (l) => l.msg === "ready")) as { grpcPort: number; httpPort: number };
  const host = settings.LISTEN_HOST ?? "127.0.0.1";
  return { process: service, grpcAddress: `${host}:${ready.grpcPort}`, httpUrl: `http://${host}:${ready.httpPort}` };
}

/** A plain client of A: no retries, no breaker, so every call is one call to A. */
function clientOf(a: Started) {
  const client = createClient(FixtureService, a.grpcAddress, { retry: false, breaker: false });
  after(() => client.close());
  return client;
}

/** The value of a `grpc_client_*` counter of one fixture method in A's /metrics. */
async function clientCounter(a: Started, family: string, method: string): Promise<number> {
  const text = await (await fetch(`${a.httpUrl}/metrics`)).text();
  const prefix = `${family}{grpc_type="unary",grpc_service="fixture.v1.FixtureService",grpc_method="${method}"} `;
  const line = text.split("\n").find((l) => l.startsWith(prefix));
  return line === undefined ? Number.NaN : Number(line.slice(prefix.length));
}

/** Every call B's Fail has handled, whatever its code. */
const bAttempts = async (b: Started) => (await handled(b, "Fail", "OK")) + (await handled(b, "Fail", "Unavailable"));

const percentile = (sorted: number[], p: number) => sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))]!;
const ms = (n: number) => `${n.toFixed(1)} ms`;

test(
  "B failing every call: A's attempts ≤ 1.2× its calls, the breaker answers in milliseconds without calling B, B's recovery is seen within seconds",
  {
    timeout: 60_000,
  },
  async () => {
    // Both start at once (A dials B on its first call): B's port is chosen first.
    const bPort = await freePort("127.0.0.1");
    const [b, a, budgetOnly] = await Promise.all([
      start(DEPENDENCY, { DEPENDENCY_FAILING: "true", GRPC_PORT: String(bPort) }),
      start(CALLER, { DEPENDENCY_ADDRESS: `127.0.0.1:${bPort}` }),
      // The retry budget alone: an A whose breaker is off.
      start(CALLER, { DEPENDENCY_ADDRESS: `127.0.0.1:${bPort}`, DEPENDENCY_POLICY: JSON.stringify({ breaker: false }) }),
    ]);
    const client = clientOf(a);
    const codeOf = (call: Promise<unknown>) =>
      call.then(
        () => Code.OK,
        (e: { code: number }) => e.code,
      );

    const budgetCalls = 100;
    const budgetClient = clientOf(budgetOnly);
    for (let i = 0; i < budgetCalls; i++) assert.equal(await codeOf(budgetClient.fail({})), Code.UNAVAILABLE);
    const budgetAttempts = await bAttempts(b);
    console.log(`# B failing, breaker off: ${budgetCalls} calls to A made ${budgetAttempts} attempts on B (the retry budget alone)`);
    assert.ok(budgetAttempts <= 1.2 * budgetCalls, `${budgetAttempts} attempts for ${budgetCalls} calls`);
    budgetOnly.process.child.kill("SIGTERM");

    // B fails every call: A's default policy retries within its budget, then its breaker opens.
    const calls = 200;
    for (let i = 0; i < calls; i++) assert.equal(await codeOf(client.fail({})), Code.UNAVAILABLE);
    const attempts = (await bAttempts(b)) - budgetAttempts;
    console.log(`# B failing: ${calls} calls to A made ${attempts} attempts on B (${(attempts / calls).toFixed(2)}x)`);
    assert.ok(attempts <= 1.2 * calls, `${attempts} attempts for ${calls} calls`);

    // The breaker is open: A answers at once, and B hardly hears of it.
    const open = 100;
    const times: number[] = [];
    for (let i = 0; i < open; i++) {
      const started = performance.now();
      assert.equal(await codeOf(client.fail({})), Code.UNAVAILABLE);
      times.push(performance.now() - started);
    }
    const reached = (await bAttempts(b)) - budgetAttempts - attempts;
    times.sort((x, y) => x - y);
    console.log(
      `# breaker open: ${open} calls to A, ${reached} reached B; A's latency p50 ${ms(percentile(times, 50))}, p99 ${ms(percentile(times, 99))}`,
    );
    assert.ok(reached <= open / 10, `${reached} of ${open} calls reached B`);
    assert.ok(percentile(times, 50) < 10, "A answers within milliseconds");

    // B recovers: A's calls succeed again.
    const switched = b.process.waitForLog("B recovered", (l) => l.msg === "dependency mode" && l.failing === false);
    b.process.child.kill("SIGUSR2");
    await switched;
    const recovering = performance.now();
    let inARow = 0;
    let tries = 0;
    while (inARow < 20 && performance.now() - recovering < 15_000) {
      tries++;
      inARow = (await codeOf(client.fail({}))) === Code.OK ? inARow + 1 : 0;
    }
    const recovery = performance.now() - recovering;
    console.log(`# B recovered: 20 calls in a row succeed after ${ms(recovery)} (${tries} calls)`);
    assert.equal(inARow, 20, "A's calls succeed again");
    assert.ok(recovery < 10_000, "within seconds");

    // A's client metrics: every attempt B handled was counted by A, with its retries and local rejections.
    const metrics = {
      calls: await clientCounter(a, "grpc_client_started_total", "Fail"),
      attempts: await clientCounter(a, "grpc_client_attempts_total", "Fail"),
      retries: await clientCounter(a, "grpc_client_retries_total", "Fail"),
      rejected: await clientCounter(a, "grpc_client_rejected_total", "Fail"),
    };
    console.log(`# A's client metrics for B's Fail: ${JSON.stringify(metrics)}`);
    assert.equal(metrics.calls, calls + open + tries);
    assert.equal(metrics.attempts, (await bAttempts(b)) - budgetAttempts, "A's attempts are the calls B handled from it");
    assert.ok(metrics.retries > 0);
    assert.ok(metrics.rejected > 0);
  },
);

/** Runs `entry` in a mount namespace whose /etc/hosts is `hosts` (as root, else through sudo -n). */
function privateHosts(hosts: string): (argv: string[]) => string[] {
  const root = process.getuid?.() === 0;
  return (argv) => [
    ...(root ? [] : ["sudo", "-n"]),
    "unshare",
    "-m",
    "sh",
    "-c",
    'mount --bind "$0" /etc/hosts && exec "$@"',
    hosts,
    ...argv,
  ];
}

/** A port free on `host` now. */
async function freePort(host: string): Promise<number> {
  const server = createServer().listen(0, host);
  await once(server, "listening");
  const { port } = server.address() as { port: number };
  server.close();
  await once(server, "close");
  return port;
}

test(
  "B as three replicas behind one name: round_robin over dns:/// spreads A's calls; hedging cuts A's p99 when one replica is slow",
  {
    timeout: 60_000,
  },
  async () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), "calling-services-"));
    after(() => fs.rmSync(dir, { recursive: true, force: true }));
    const hosts = path.join(dir, "hosts");
    fs.writeFileSync(hosts, "127.0.0.1 localhost\n127.0.0.2 b.test\n127.0.0.3 b.test\n127.0.0.4 b.test\n");
    const port = await freePort("127.0.0.2"); // for every replica
    const slowMs = 100;
    const target = `dns:///b.test:${port}`;
    const caller = (policy: object) =>
      start(CALLER, { DEPENDENCY_ADDRESS: target, DEPENDENCY_POLICY: JSON.stringify(policy) }, privateHosts(hosts));
    // Every process starts at once: the three replicas and two A's, one plain, one hedging Echo.
    const [plainA, hedgedA] = await Promise.all([
      caller({}),
      caller({ methods: { echo: { hedging: { maxAttempts: 2, delayMs: 15 } } } }),
      ...["b1", "b2", "b3"].map((name, i) =>
        start(DEPENDENCY, {
          LISTEN_HOST: `127.0.0.${i + 2}`,
          GRPC_PORT: String(port),
          DEPENDENCY_NAME: name,
          // The first replica is slow.
          DEPENDENCY_SLOW_MS: i === 0 ? String(slowMs) : "0",
        }),
      ),
    ]);

    /** `calls` calls of A's Echo, one after another: each answer's replica and the latencies, sorted. */
    async function measure(a: Started, calls: number) {
      const client = clientOf(a);
      for (let i = 0; i < 6; i++) await client.echo({ message: "warm-up" }); // every replica connected
      const by: Record<string, number> = {};
      const times: number[] = [];
      for (let i = 0; i < calls; i++) {
        const started = performance.now();
        const { message } = await client.echo({ message: "which replica?" });
        times.push(performance.now() - started);
        by[message] = (by[message] ?? 0) + 1;
      }
      return { by, times: times.sort((x, y) => x - y) };
    }

    const calls = 90;
    const plain = await measure(plainA!, calls);
    const hedged = await measure(hedgedA!, calls);
    const line = (name: string, r: typeof plain) =>
      `${name}: p50 ${ms(percentile(r.times, 50))}, p90 ${ms(percentile(r.times, 90))}, p99 ${ms(percentile(r.times, 99))}, answered by ${JSON.stringify(r.by)}`;
    console.log(`# A's Echo over B's 3 replicas (b1 answers after ${slowMs} ms), ${calls} calls one after another`);
    console.log(`# round_robin:              ${line("plain", plain)}`);
    console.log(`# round_robin + hedging 15 ms: ${line("hedged", hedged)}`);

    for (const name of ["b1", "b2", "b3"]) {
      assert.ok((plain.by[name] ?? 0) >= calls / 5, `round_robin sends ${name} its share: ${JSON.stringify(plain.by)}`);
    }
    assert.ok(percentile(plain.times, 99) >= slowMs, "without hedging the slow replica sets the p99");
    // Hedged, a call waits for the hedge's delay and a fast replica, not for the slow one (a p99 of 90 calls is
    // their second slowest: it is compared with the plain one's, p90 with the slow replica's delay).
    assert.ok(percentile(hedged.times, 99) < percentile(plain.times, 99), "hedging cuts the p99");
    assert.ok(percentile(hedged.times, 90) < slowMs / 2, "hedging answers from another replica first");
  },
);
