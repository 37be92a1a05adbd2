/**
 * Replicas of the compiled service (dist/main.js), one per loopback address, all on the same two ports.
 */
import { type ChildProcess, spawn } from "node:child_process";
import { once } from "node:events";
import { createServer } from "node:net";
import path from "node:path";

export interface Ports {
  grpc: number;
  http: number;
}

export interface Replica {
  name: string;
  host: string;
  child: ChildProcess;
  exited: Promise<number | null>;
  /** stderr and non-JSON stdout, for the report when something fails. */
  output: () => string;
}

/** Every replica process started, so that the run can end them whatever happens. */
export const spawned = new Set<ChildProcess>();

/** Whether `port` can be bound on every one of `hosts` right now. */
async function freeOnAll(port: number, hosts: string[]): Promise<boolean> {
  for (const host of hosts) {
    const server = createServer();
    const ok = await new Promise<boolean>((resolve) => {
      server.once("error", () => resolve(false));
      server.listen(port, host, () => resolve(true));
    });
    if (ok) await new Promise((r) => server.close(r));
    if (!ok) return false;
  }
  return true;
}

/** `count` ports, each free on every one of `hosts` (picked once: the replicas share them, one address each). */
export async function pickPorts(hosts: string[], count: number): Promise<number[]> {
  const ports: number[] = [];
  while (ports.length < count) {
    const probe = createServer();
    probe.listen(0, "127.0.0.1");
    await once(probe, "listening");
    const address = probe.address();
    await new Promise((r) => probe.close(r));
    const port = typeof address === "object" && address ? address.port : 0;
    if (port > 0 && !ports.includes(port) && (await freeOnAll(port, hosts))) ports.push(port);
  }
  return ports;
}

/** Starts `dist/main.js` on `host`; resolves once its /readycheck answers 200. */
export async function startReplica(name: string, host: string, ports: Ports, env: Record<string, string>): Promise<Replica> {
  const child = spawn(process.execPath, [path.resolve("dist/main.js")], {
    env: {
      PATH: process.env.PATH ?? "",
      HOSTNAME: name,
      LISTEN_HOST: host,
      GRPC_PORT: String(ports.grpc),
      HTTP_PORT: String(ports.http),
      LOG_LEVEL: "warn",
      ...env,
    },
    stdio: ["ignore", "pipe", "pipe"],
  });
  spawned.add(child);
  let text = "";
  const keep = (chunk: Buffer) => {
    text = (text + chunk.toString()).slice(-20_000);
  };
  child.stdout?.on("data", keep);
  child.stderr?.on("data", keep);
  const exited = once(child, "exit").then(([code]) => {
    spawned.delete(child);
    return code as number | null;
  });
  const replica: Replica = { name, host, child, exited, output: () => text };
  await waitReady(replica, ports.http);
  return replica;
}

async function waitReady(replica: Replica, httpPort: number): Promise<void> {
  const deadline = Date.now() + 30_000;
  let exitedEarly = false;
  void replica.exited.then(() => (exitedEarly = true));
  while (Date.now() < deadline && !exitedEarly) {
    const status = await fetch(`http://${replica.host}:${httpPort}/readycheck`).then(
      (r) => r.status,
      () => 0,
    );
    if (status === 200) return;
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error(`${replica.name} did not become ready:\n${replica.output()}`);
}

/** SIGTERM, then its exit code (the drain and shutdown run in between). */
export async function stopReplica(replica: Replica): Promise<number | null> {
  replica.child.kill("SIGTERM");
  return replica.exited;
}

/** The calls a replica has answered so far: the sum of its grpc_server_handled_total. */
export async function handledCalls(host: string, httpPort: number): Promise<number> {
  const text = await (await fetch(`http://${host}:${httpPort}/metrics`)).text();
  let sum = 0;
  for (const line of text.split("\n")) {
    if (line.startsWith("grpc_server_handled_total{")) sum += Number(line.slice(line.lastIndexOf(" ") + 1));
  }
  return sum;
}
