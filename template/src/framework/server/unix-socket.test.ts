import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { once } from "node:events";
import { existsSync, mkdirSync, mkdtempSync, renameSync, rmSync } from "node:fs";
import { connect, createServer } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { test } from "node:test";
import { removeStaleSockets } from "./unix-socket.js";

/** A process that listens on `<dir>/grpc.sock` and is then killed with SIGKILL, leaving the socket file; its pid. */
async function killedListener(dir: string): Promise<number> {
  const script = `require("node:net").createServer().listen(process.argv[1], () => console.log("listening"))`;
  const child = spawn(process.execPath, ["-e", script, join(dir, "grpc.sock")], { stdio: ["ignore", "pipe", "inherit"] });
  await once(child.stdout, "data");
  const exited = once(child, "exit");
  child.kill("SIGKILL");
  await exited;
  return child.pid!;
}

test("stale gateway sockets of dead processes are removed; a socket someone serves on, a live pid's, and others' files are kept", async (t) => {
  const parent = mkdtempSync(join(tmpdir(), "unix-socket-test-"));
  t.after(() => rmSync(parent, { recursive: true, force: true }));
  // What kill -9 leaves: a socket file nobody listens on, in a directory named after the dead pid.
  const scratch = join(parent, "scratch");
  mkdirSync(scratch);
  const dead = await killedListener(scratch);
  const stale = join(parent, `grpc-gateway-${dead}-aaaaaa`);
  renameSync(scratch, stale);
  assert.ok(existsSync(join(stale, "grpc.sock")), "the killed process left its socket file");
  // The same dead pid, but someone serves on the socket (another pid namespace sharing the directory): kept.
  const serving = join(parent, `grpc-gateway-${dead}-bbbbbb`);
  mkdirSync(serving);
  const server = createServer((socket) => socket.destroy()).listen(join(serving, "grpc.sock"));
  await once(server, "listening");
  t.after(() => server.close());
  const empty = join(parent, `grpc-gateway-${dead}-cccccc`); // killed before it bound its socket
  mkdirSync(empty);
  const starting = join(parent, `grpc-gateway-${process.ppid}-dddddd`); // a live process that has not bound yet
  mkdirSync(starting);
  const other = join(parent, `grpc-gateway-${dead}-toolong`); // not a name bindUnixSocket makes
  mkdirSync(other);

  const removed = await removeStaleSockets(parent);
  assert.deepEqual(removed.sort(), [stale, empty].sort());
  assert.ok(!existsSync(stale) && !existsSync(empty));
  assert.ok(existsSync(join(serving, "grpc.sock")), "the served socket stays");
  assert.ok(existsSync(starting) && existsSync(other));
  // And the served one still answers.
  const client = connect(join(serving, "grpc.sock"));
  await once(client, "connect");
  client.destroy();
});
