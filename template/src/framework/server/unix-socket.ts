import { chmodSync, lstatSync, mkdtempSync, readdirSync, rmSync } from "node:fs";
import { connect } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { type Server, ServerCredentials } from "@grpc/grpc-js";

export interface UnixSocket {
  /** grpc-js target for clients, `unix:/…/grpc.sock`. */
  target: string;
  /** Socket directories of killed processes removed before this one was made. */
  replaced: string[];
  remove(): void;
}

const PREFIX = "grpc-gateway-";
const SOCKET = "grpc.sock";
/** `grpc-gateway-<pid>-<mkdtemp's 6 random characters>`: the pid says whose it is. */
const OURS = /^grpc-gateway-(\d+)-[A-Za-z0-9]{6}$/;

/**
 * Binds the gRPC server to a socket in a fresh private directory (0700, socket 0600),
 * so only this user's processes can reach the gateway's hop. Resolves to undefined when
 * that is impossible, and the gateway silently stays on TCP. The directory's name is random
 * (mkdtemp: nobody can make it first) and carries the pid, so the directories a killed process
 * left behind are found and removed first (`removeStaleSockets`).
 */
export async function bindUnixSocket(server: Server, parent = tmpdir()): Promise<UnixSocket | undefined> {
  const replaced = await removeStaleSockets(parent).catch(() => []);
  let dir: string | undefined;
  try {
    dir = mkdtempSync(join(parent, `${PREFIX}${process.pid}-`));
    chmodSync(dir, 0o700);
    const path = join(dir, SOCKET);
    await new Promise<void>((resolve, reject) =>
      server.bindAsync(`unix:${path}`, ServerCredentials.createInsecure(), (err) => (err ? reject(err) : resolve())),
    );
    chmodSync(path, 0o600);
    const owned = dir;
    return { target: `unix:${path}`, replaced, remove: () => rmSync(owned, { recursive: true, force: true }) };
  } catch {
    if (dir) rmSync(dir, { recursive: true, force: true });
    return undefined;
  }
}

/**
 * Removes the socket directories under `parent` that a killed process (`kill -9`, OOM) left behind: ours by
 * name and owner, whose process is gone, and whose socket nobody answers on. A socket that accepts a
 * connection is never removed, whatever the pid says (another pid namespace may share this directory), and
 * neither is one of a live process that has not bound it yet. Returns the directories removed.
 */
export async function removeStaleSockets(parent: string): Promise<string[]> {
  const uid = process.getuid?.();
  const removed: string[] = [];
  for (const name of readdirSync(parent)) {
    const pid = OURS.exec(name)?.[1];
    if (pid === undefined) continue;
    const dir = join(parent, name);
    const stat = lstatSync(dir, { throwIfNoEntry: false });
    if (!stat?.isDirectory() || (uid !== undefined && stat.uid !== uid)) continue;
    if (Number(pid) !== process.pid && processAlive(Number(pid))) continue;
    if ((await probe(join(dir, SOCKET))) !== "nobody") continue;
    rmSync(dir, { recursive: true, force: true });
    removed.push(dir);
  }
  return removed;
}

function processAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === "EPERM"; // alive, someone else's
  }
}

/** Whether a process serves on the socket at `path`: "nobody" when there is no socket or no listener. */
function probe(path: string): Promise<"serving" | "nobody" | "unknown"> {
  return new Promise((resolve) => {
    const socket = connect(path);
    socket.once("connect", () => {
      socket.destroy();
      resolve("serving");
    });
    socket.once("error", (err: NodeJS.ErrnoException) =>
      resolve(err.code === "ECONNREFUSED" || err.code === "ENOENT" ? "nobody" : "unknown"),
    );
  });
}
