// The gateway's Unix socket across a kill -9: the next start removes what the killed process left and
// serves, and never touches the socket of a process still serving on it. The processes get a temp directory
// of their own: every start sweeps the sockets of killed processes it finds there, so a service started by
// another test file at the same time could otherwise sweep this test's stale socket first.
import assert from "node:assert/strict";
import { once } from "node:events";
import { existsSync, mkdtempSync, readdirSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, afterEach, test } from "node:test";
import { FIXTURE_MAIN, killServiceProcesses, type LogLine, startServiceProcess } from "./support/service-process.js";

afterEach(killServiceProcesses);

const TEMP = mkdtempSync(join(tmpdir(), "unix-socket-restart-"));
after(() => rmSync(TEMP, { recursive: true, force: true }));

/** The service in unix gateway mode, once ready. */
async function startInUnixMode() {
  const service = startServiceProcess(FIXTURE_MAIN, { GATEWAY_MODE: "unix", TMPDIR: TEMP });
  const ready = await service.waitForLog("ready", (l: LogLine) => l.msg === "ready");
  assert.equal(ready.gatewayMode, "unix");
  return { service, httpUrl: `http://127.0.0.1:${ready.httpPort}` };
}

/** The socket directories of the process with this pid (named `grpc-gateway-<pid>-XXXXXX`) in the test's temp directory. */
function socketDirs(pid: number | undefined): string[] {
  return readdirSync(TEMP)
    .filter((name) => name.startsWith(`grpc-gateway-${pid}-`))
    .map((name) => join(TEMP, name));
}

async function echoThroughGateway(httpUrl: string): Promise<void> {
  const res = await fetch(`${httpUrl}/api/v1/echo/through-the-socket`);
  assert.equal(res.status, 200);
  assert.equal(((await res.json()) as { message: string }).message, "through-the-socket");
}

test("after kill -9 in unix gateway mode, a restart removes the stale socket and serves; a live one's socket is left alone", async () => {
  const first = await startInUnixMode();
  await echoThroughGateway(first.httpUrl);
  const [stale] = socketDirs(first.service.child.pid);
  assert.ok(stale && existsSync(join(stale, "grpc.sock")));
  first.service.child.kill("SIGKILL");
  await once(first.service.child, "exit");
  assert.ok(existsSync(join(stale, "grpc.sock")), "kill -9 leaves the socket behind");

  const second = await startInUnixMode();
  await echoThroughGateway(second.httpUrl);
  assert.ok(!existsSync(stale), "the stale socket directory is gone");
  const removed = second.service.logs.find((l) => l.msg === "removed the gateway sockets of killed processes");
  assert.ok((removed?.removed as string[] | undefined)?.includes(stale), "start-up says what it removed");
  const [live] = socketDirs(second.service.child.pid);
  assert.ok(live);

  // A third start beside the running one must not take its socket away.
  const third = await startInUnixMode();
  assert.ok(existsSync(join(live, "grpc.sock")), "the live service's socket stays");
  await echoThroughGateway(second.httpUrl);
  await echoThroughGateway(third.httpUrl);

  // A clean stop removes its own socket.
  const [thirds] = socketDirs(third.service.child.pid);
  for (const { service } of [second, third]) service.child.kill("SIGTERM");
  assert.equal((await second.service.finished).code, 0);
  assert.equal((await third.service.finished).code, 0);
  assert.ok(!existsSync(live) && thirds !== undefined && !existsSync(thirds));
});
