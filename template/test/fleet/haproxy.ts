/**
 * HAProxy with deploy/haproxy/haproxy.cfg as it is (the addresses and ports come from the environment, which
 * HAProxy reads itself), and its runtime API: which servers are UP.
 */
import { type ChildProcess, spawn } from "node:child_process";
import { once } from "node:events";
import { connect } from "node:net";
import path from "node:path";

export interface HaproxyEnv {
  FLEET_LISTEN: string;
  FLEET_GRPC_PORT: string;
  FLEET_HTTP_PORT: string;
  FLEET_STATS_SOCKET: string;
  REPLICA_1: string;
  REPLICA_2: string;
  REPLICA_3: string;
  REPLICA_4: string;
  REPLICA_GRPC_PORT: string;
  REPLICA_HTTP_PORT: string;
}

export const CONFIG = path.resolve("deploy/haproxy/haproxy.cfg");

export interface Haproxy {
  child: ChildProcess;
  output: () => string;
  stop(): Promise<void>;
}

export async function startHaproxy(env: HaproxyEnv): Promise<Haproxy> {
  // -db: stay in the foreground; -W is not used, so SIGTERM stops it.
  const child = spawn("haproxy", ["-db", "-f", CONFIG], {
    env: { PATH: process.env.PATH ?? "", ...env },
    stdio: ["ignore", "pipe", "pipe"],
  });
  let text = "";
  const keep = (chunk: Buffer) => {
    text = (text + chunk.toString()).slice(-20_000);
  };
  child.stdout?.on("data", keep);
  child.stderr?.on("data", keep);
  const exited = once(child, "exit");
  const failedToStart = once(child, "error").then(([err]) => {
    throw new Error(`cannot run haproxy (${(err as Error).message}): install it (Debian: apt-get install haproxy)`);
  });
  failedToStart.catch(() => {});
  await Promise.race([failedToStart, new Promise((r) => setTimeout(r, 100))]);
  const deadline = Date.now() + 10_000;
  while (Date.now() < deadline) {
    if (child.exitCode !== null) throw new Error(`haproxy exited ${child.exitCode}:\n${text}`);
    if (
      await runtime(env.FLEET_STATS_SOCKET, "show info").then(
        () => true,
        () => false,
      )
    )
      break;
    await new Promise((r) => setTimeout(r, 50));
  }
  return {
    child,
    output: () => text,
    async stop() {
      child.kill("SIGTERM");
      await exited;
    },
  };
}

/** One command on HAProxy's runtime API socket; resolves to its answer. */
export function runtime(socketPath: string, command: string): Promise<string> {
  return new Promise((resolve, reject) => {
    const socket = connect(socketPath);
    let text = "";
    socket.on("data", (chunk) => (text += chunk.toString()));
    socket.on("error", reject);
    socket.on("end", () => resolve(text));
    socket.on("connect", () => socket.write(`${command}\n`));
  });
}

/** Each server's status (UP, DOWN, MAINT…) by `backend/server`, from `show stat`. */
export async function serverStates(socketPath: string): Promise<Record<string, string>> {
  const csv = await runtime(socketPath, "show stat");
  const [header, ...rows] = csv.replace(/^# /, "").trim().split("\n");
  const columns = (header ?? "").split(",");
  const [px, sv, status] = ["pxname", "svname", "status"].map((c) => columns.indexOf(c)) as [number, number, number];
  const states: Record<string, string> = {};
  for (const row of rows) {
    const cells = row.split(",");
    if (cells[sv] === "FRONTEND" || cells[sv] === "BACKEND") continue;
    states[`${cells[px]}/${cells[sv]}`] = cells[status] ?? "";
  }
  return states;
}

/** Waits until `server` (r1…r4) is `state` ("UP" or "DOWN") in both backends. */
export async function waitServer(socketPath: string, server: string, state: "UP" | "DOWN", timeoutMs = 20_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const states = await serverStates(socketPath);
    const both = [states[`replicas_grpc/${server}`], states[`replicas_http/${server}`]];
    if (both.every((s) => s?.startsWith(state))) return;
    if (Date.now() > deadline) throw new Error(`haproxy: ${server} not ${state} in time: ${JSON.stringify(states)}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}
