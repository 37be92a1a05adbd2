/**
 * `make fleet`: the compiled service as a fleet of replicas on loopback addresses, proven to lose no call.
 *
 * Part 1, behind HAProxy (deploy/haproxy/haproxy.cfg): 3 replicas on 127.0.0.2-4, HAProxy on 127.0.0.1 with
 * active /readycheck checks, and mixed load (gRPC unary, server stream, bidi; REST; WebSocket) counting every
 * call's final status. Phases: steady; a rolling restart of every replica (SIGTERM, exit 0, start anew, ready,
 * UP in HAProxy); scale-out to a 4th replica (127.0.0.5). Passes with 0 failed calls and every replica having
 * served calls (its grpc_server_handled_total) before and after its restart.
 *
 * Part 2, client-side balancing: a grpc-js client with `dns:///fleet.test:<port>` and round_robin, the name
 * given three addresses by a private /etc/hosts (a mount namespace: `unshare -m`, root or sudo). A 4th replica
 * joins mid-run (the hosts file gains its address): with a short maximum connection age the client reconnects,
 * re-resolves and sends it a share of its calls; with the maximum age off (the negative control) it sends it none.
 *
 * Bounded: about 2 minutes, a few hundred calls a second at most, every address on loopback. Prints per phase
 * the calls made and failed by protocol and what each replica served; exits 1 if any check fails.
 * Run it on your own service: the load calls the starter API (Echo, Countdown, Chat): adapt load.ts to your methods.
 */
import { type ChildProcess, spawn } from "node:child_process";
import { once } from "node:events";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { createInterface } from "node:readline";
import { type HaproxyEnv, startHaproxy, waitServer } from "./haproxy.js";
import { grpcClient, PROTOCOLS, startLoad, type Tallies } from "./load.js";
import { handledCalls, type Ports, pickPorts, type Replica, spawned, startReplica, stopReplica } from "./replicas.js";

const HOSTS = ["127.0.0.2", "127.0.0.3", "127.0.0.4", "127.0.0.5"] as const;
const NAMES = ["r1", "r2", "r3", "r4"] as const;
/**
 * Longer than HAProxy needs to see readiness fail (2 checks 200 ms apart, each up to 1 s on a busy machine), so
 * it stops sending first.
 */
const DRAIN = { GRPC_GRACEFUL_DURATION_IN_SECONDS: "2.5", SHUTDOWN_DURATION_IN_SECONDS: "10", ...overload() };

/**
 * The event-loop checks of the overload protection are off in the replicas unless FLEET_OVERLOAD=on: this run
 * puts 4 replicas, HAProxy and the clients on however few cores the machine has, so their event loops lag
 * because the machine is full, not because of the calls (on 2 busy cores, a quarter of the calls were refused
 * at ~100 calls/s). What this run proves is the rolling update and the rebalancing; with FLEET_OVERLOAD=on the
 * refused calls are counted apart ("shed").
 */
function overload(): Record<string, string> {
  if (process.env.FLEET_OVERLOAD === "on") return {};
  return { OVERLOAD_MAX_EVENT_LOOP_DELAY_MS: "0", OVERLOAD_MAX_EVENT_LOOP_UTILIZATION: "0" };
}
const STEADY_MS = 5000;
const SCALED_MS = 5000;
/** Part 2: the short maximum age and grace of the run, and how long the client goes on after the 4th replica joins. */
const AGE = { seconds: 3, grace: 2 };
const AFTER_JOIN_MS = (AGE.seconds * 1.1 + AGE.grace + 3) * 1000;

const problems: string[] = [];
const check = (ok: boolean, what: string) => {
  if (!ok) problems.push(what);
};
const pause = (ms: number) => new Promise((r) => setTimeout(r, ms));
const log = (line: string) => process.stdout.write(`${line}\n`);

const started: (Replica | undefined)[] = [];
const children: ChildProcess[] = [];
const work = mkdtempSync(path.join(tmpdir(), "fleet-"));

function printTallies(phase: string, tallies: Tallies): void {
  log(`  ${phase}`);
  for (const p of PROTOCOLS) {
    const t = tallies[p];
    const reasons = Object.keys(t.reasons).length > 0 ? `  ${JSON.stringify(t.reasons)}` : "";
    const shed = t.shed > 0 ? `  (shed by overload protection: ${t.shed})` : "";
    log(`    ${p.padEnd(19)} calls ${String(t.calls).padStart(6)}  failed ${t.failed}${shed}${reasons}`);
    check(t.failed === 0, `${phase}: ${t.failed} ${p} call(s) failed: ${JSON.stringify(t.reasons)}`);
    check(t.calls > 0, `${phase}: no ${p} call made`);
  }
}

/**
 * Part 1's replicas send their connections GOAWAY every few seconds, so HAProxy's connections to them (and each
 * replica's gateway connection to its own gRPC port) are renewed throughout the run, not only by the restarts.
 */
const PART1 = { ...DRAIN, GRPC_SERVER_MAX_CONNECTION_AGE_SECONDS: "4", GRPC_SERVER_MAX_CONNECTION_AGE_GRACE_SECONDS: "10" };

async function behindHaproxy(ports: Ports, front: { grpc: number; http: number }): Promise<void> {
  log("Part 1: 3 replicas behind HAProxy (max connection age 4 s), mixed load; rolling restart; scale-out to 4");
  const env: HaproxyEnv = {
    FLEET_LISTEN: "127.0.0.1",
    FLEET_GRPC_PORT: String(front.grpc),
    FLEET_HTTP_PORT: String(front.http),
    FLEET_STATS_SOCKET: path.join(work, "haproxy.sock"),
    REPLICA_1: HOSTS[0],
    REPLICA_2: HOSTS[1],
    REPLICA_3: HOSTS[2],
    REPLICA_4: HOSTS[3],
    REPLICA_GRPC_PORT: String(ports.grpc),
    REPLICA_HTTP_PORT: String(ports.http),
  };
  for (let i = 0; i < 3; i++) started[i] = await startReplica(NAMES[i]!, HOSTS[i]!, ports, PART1);
  const haproxy = await startHaproxy(env);
  children.push(haproxy.child);
  try {
    for (const name of NAMES.slice(0, 3)) await waitServer(env.FLEET_STATS_SOCKET, name, "UP");
    await waitServer(env.FLEET_STATS_SOCKET, "r4", "DOWN");

    const grpc = grpcClient(`127.0.0.1:${front.grpc}`);
    const load = startLoad({ grpc, httpUrl: `http://127.0.0.1:${front.http}` });
    const phases: [string, Tallies][] = [];
    let phaseStart = Date.now();
    /** How long the phase took, and starts the next. */
    const since = () => {
      const s = `${((Date.now() - phaseStart) / 1000).toFixed(1)} s`;
      phaseStart = Date.now();
      return s;
    };
    const served: Record<string, { before: number; after: number }> = {};
    await pause(STEADY_MS);
    phases.push([`steady (3 replicas, ${since()})`, load.nextPhase()]);

    for (let i = 0; i < 3; i++) {
      const old = started[i]!;
      const before = await handledCalls(old.host, ports.http);
      const code = await stopReplica(old);
      check(code === 0, `${old.name} exited ${code} on SIGTERM:\n${old.output()}`);
      started[i] = await startReplica(old.name, old.host, ports, PART1);
      await waitServer(env.FLEET_STATS_SOCKET, old.name, "UP");
      served[old.name] = { before, after: 0 };
    }
    phases.push([`rolling restart of r1, r2, r3 (${since()})`, load.nextPhase()]);

    started[3] = await startReplica("r4", HOSTS[3], ports, PART1);
    await waitServer(env.FLEET_STATS_SOCKET, "r4", "UP");
    await pause(SCALED_MS);
    phases.push([`scale-out to 4 replicas (${since()})`, load.nextPhase()]);
    await load.stop();
    grpc.close();

    for (let i = 0; i < 4; i++) {
      const r = started[i]!;
      const after = await handledCalls(r.host, ports.http);
      served[r.name] = { before: served[r.name]?.before ?? 0, after };
    }
    log("  calls made and failed, by protocol:");
    for (const [phase, tallies] of phases) printTallies(phase, tallies);
    log("  calls each replica served (grpc_server_handled_total) before its restart / since:");
    for (const name of NAMES) {
      const s = served[name]!;
      log(`    ${name}  ${name === "r4" ? "(new)".padStart(6) : String(s.before).padStart(6)} / ${s.after}`);
      if (name !== "r4") check(s.before > 0, `${name} served nothing before its restart`);
      check(s.after > 0, `${name} served nothing ${name === "r4" ? "after joining" : "after its restart"}`);
    }
  } finally {
    await haproxy.stop();
    await stopAll();
  }
}

async function stopAll(): Promise<void> {
  await Promise.all(
    started.splice(0).map(async (r) => {
      if (!r) return;
      const code = await stopReplica(r);
      check(code === 0, `${r.name} exited ${code} on SIGTERM:\n${r.output()}`);
    }),
  );
}

/** The command that runs `argv` with `hosts` as its /etc/hosts (a private mount namespace). */
function withHosts(hostsFile: string, argv: string[]): [string, string[]] {
  const quoted = argv.map((a) => `'${a.replace(/'/g, "'\\''")}'`).join(" ");
  const inner = ["-m", "sh", "-c", `mount --bind '${hostsFile}' /etc/hosts && exec ${quoted}`];
  return process.getuid?.() === 0 ? ["unshare", inner] : ["sudo", ["-n", "unshare", ...inner]];
}

/** One client-side balancing run; resolves to the 4th replica's share of the calls made after it joined. */
async function balancingRun(ports: Ports, maxAgeSeconds: number): Promise<{ share: number; joinedCalls: number; served: number }> {
  const env = {
    ...DRAIN,
    GRPC_SERVER_MAX_CONNECTION_AGE_SECONDS: String(maxAgeSeconds),
    GRPC_SERVER_MAX_CONNECTION_AGE_GRACE_SECONDS: String(AGE.grace),
  };
  for (let i = 0; i < 3; i++) started[i] = await startReplica(NAMES[i]!, HOSTS[i]!, ports, env);
  const hostsFile = path.join(work, "hosts");
  const hosts = (n: number) =>
    `127.0.0.1 localhost\n${HOSTS.slice(0, n)
      .map((h) => `${h} fleet.test`)
      .join("\n")}\n`;
  writeFileSync(hostsFile, hosts(3));
  const [command, args] = withHosts(hostsFile, [
    process.execPath,
    "--import",
    "tsx",
    path.resolve("test/fleet/balancing-client.ts"),
    `dns:///fleet.test:${ports.grpc}`,
  ]);
  const client = spawn(command, args, { stdio: ["pipe", "pipe", "inherit"] });
  children.push(client);
  const lines = createInterface({ input: client.stdout! })[Symbol.asyncIterator]();
  const next = async () => String((await lines.next()).value ?? "");
  try {
    const first = await next();
    if (first !== "started") throw new Error(`balancing client: ${first}`);
    await pause(2000);
    started[3] = await startReplica("r4", HOSTS[3], ports, env);
    // In place (same inode): the bind mount shows the file, not the name.
    writeFileSync(hostsFile, hosts(4));
    client.stdin!.write("mark\n");
    await next();
    await pause(AFTER_JOIN_MS);
    client.stdin!.end("stop\n");
    const result = JSON.parse(await next()) as { calls: number; total: number; failed: number; reasons: Record<string, number> };
    await once(client, "exit");
    const served = await handledCalls(HOSTS[3], ports.http);
    check(
      result.failed === 0,
      `balancing (max age ${maxAgeSeconds}): ${result.failed} of ${result.total} calls failed: ${JSON.stringify(result.reasons)}`,
    );
    return { share: served / Math.max(1, result.calls), joinedCalls: result.calls, served };
  } finally {
    client.kill();
    await stopAll();
  }
}

async function clientSideBalancing(ports: Ports): Promise<void> {
  log(`Part 2: client-side balancing, dns:///fleet.test:${ports.grpc} with round_robin; a 4th replica joins mid-run`);
  const on = await balancingRun(ports, AGE.seconds);
  log(
    `  max age ${AGE.seconds} s, grace ${AGE.grace} s: the new replica served ${on.served} of the ${on.joinedCalls} calls made after it joined (share ${(100 * on.share).toFixed(1)} %)`,
  );
  check(on.served > 0, "with a maximum age, the new replica got no call from the running client");
  const off = await balancingRun(ports, 0);
  log(
    `  max age off (negative control): the new replica served ${off.served} of ${off.joinedCalls} (share ${(100 * off.share).toFixed(1)} %)`,
  );
  check(off.served === 0, "with the maximum age off, the new replica got calls: the control does not show what max age changes");
}

async function main(): Promise<void> {
  const t0 = Date.now();
  if (process.env.FLEET_OVERLOAD !== "on")
    log("(the overload protection's event-loop checks are off in the replicas: FLEET_OVERLOAD=on keeps them)");
  const [grpc, http, frontGrpc, frontHttp] = await pickPorts([...HOSTS, "127.0.0.1"], 4);
  const ports = { grpc: grpc!, http: http! };
  // FLEET_PARTS=2 runs only part 2 (while working on it).
  const parts = (process.env.FLEET_PARTS ?? "1,2").split(",");
  if (parts.includes("1")) await behindHaproxy(ports, { grpc: frontGrpc!, http: frontHttp! });
  if (parts.includes("2")) await clientSideBalancing(ports);
  log(`fleet: ${((Date.now() - t0) / 1000).toFixed(0)} s, ${problems.length === 0 ? "passed" : `FAILED:\n  ${problems.join("\n  ")}`}`);
  process.exitCode = problems.length === 0 ? 0 : 1;
}

// Whatever ends this process, the replicas and HAProxy end with it.
process.on("exit", () => {
  for (const c of [...children, ...spawned]) if (c.exitCode === null) c.kill("SIGKILL");
});

try {
  await main();
} catch (err) {
  log(`fleet: FAILED: ${(err as Error).stack ?? err}`);
  process.exitCode = 1;
} finally {
  for (const c of children) if (c.exitCode === null) c.kill("SIGKILL");
  rmSync(work, { recursive: true, force: true });
}
