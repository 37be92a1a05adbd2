/**
 * The real service as a child process: start-up, readiness, graceful shutdown on
 * SIGTERM, and start-up failures (see test/support/service-process.ts).
 */
import assert from "node:assert/strict";
import { afterEach, describe, test } from "node:test";
import { setTimeout as sleep } from "node:timers/promises";
import { readPackageJson } from "../../src/framework/health/build-info.js";
import { FIXTURE_MAIN, killServiceProcesses, startServiceProcess, withBusyPort } from "./support/service-process.js";

const TEST_TIMEOUT_MS = 30_000;

afterEach(killServiceProcesses);

describe("the service process", () => {
  test("drains on SIGTERM: readiness turns 503, an in-flight request completes, exit 0", { timeout: TEST_TIMEOUT_MS }, async () => {
    // debug level makes the echo handler log "echo received", which tells us the slow call has arrived.
    const service = startServiceProcess(FIXTURE_MAIN, { LOG_LEVEL: "debug" });
    const ready = await service.waitForLog("ready", (l) => l.msg === "ready");
    const { grpcPort, httpPort } = ready as { grpcPort: number; httpPort: number };
    assert.ok(Number.isInteger(grpcPort) && grpcPort > 0, `grpcPort ${grpcPort}`);
    assert.ok(Number.isInteger(httpPort) && httpPort > 0, `httpPort ${httpPort}`);
    assert.notEqual(grpcPort, httpPort);
    const base = `http://127.0.0.1:${httpPort}`;

    const readyResponse = await fetch(`${base}/readycheck`);
    assert.equal(readyResponse.status, 200);
    assert.match(readyResponse.headers.get("content-type") ?? "", /application\/json/);
    const info = (await readyResponse.json()) as Record<string, unknown>;
    assert.deepEqual(Object.keys(info).sort(), ["app", "branch", "build_date", "git_commit", "node_version", "os_arch", "version"]);
    for (const [key, value] of Object.entries(info)) assert.equal(typeof value, "string", `${key} should be a string`);
    assert.equal(info.app, readPackageJson().name);
    assert.equal(info.version, "0.1.0");
    assert.equal(info.node_version, process.version);

    // A keep-alive request (fetch's default), as load balancers and browsers send them.
    const slow = fetch(`${base}/api/v1/echo`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ message: "still answered", delayMs: 1500 }),
    });
    await service.waitForLog("echo received", (l) => l.msg === "echo received" && l.delayMs === 1500);

    const signalledAt = Date.now();
    service.child.kill("SIGTERM");

    // Readiness must fail during the drain, while the server still answers.
    let notReady: Response | undefined;
    for (let attempt = 0; attempt < 100 && !notReady; attempt++) {
      const r = await fetch(`${base}/readycheck`);
      if (r.status === 503) notReady = r;
      else {
        assert.equal(r.status, 200, "readiness answers 200 until it fails");
        await r.arrayBuffer();
        await sleep(10);
      }
    }
    assert.ok(notReady, "/readycheck never turned 503");
    assert.ok(Date.now() - signalledAt < 1000, "readiness failed within the graceful window");
    assert.equal(await notReady.text(), '{"code":14,"message":"not ready","details":[]}');

    const answered = await slow;
    assert.equal(answered.status, 200);
    const body = (await answered.json()) as { message: string; traceId: string };
    assert.equal(body.message, "still answered");
    assert.ok(body.traceId.length > 0);

    const { code, signal } = await service.finished;
    assert.equal(signal, null);
    assert.equal(code, 0, `exit code; stderr:\n${service.stderr()}`);

    const messages = service.logs.map((l) => l.msg);
    const shuttingDown = messages.indexOf("shutting down");
    const stopped = messages.indexOf("stopped");
    assert.ok(shuttingDown !== -1, "logs 'shutting down'");
    assert.ok(stopped > shuttingDown, "logs 'stopped' after 'shutting down'");
    assert.ok(messages.indexOf("ready") < shuttingDown);
    const echoLine = service.logs.find((l) => l.msg === "response time" && l.grpcMethod === "/fixture.v1.FixtureService/Echo");
    assert.equal(echoLine?.grpcCode, "OK", "the drained call is logged as OK");
  });

  test("a bad configuration exits 1 with one stderr line per bad variable", { timeout: TEST_TIMEOUT_MS }, async () => {
    const service = startServiceProcess(FIXTURE_MAIN, { GRPC_PORT: "abc", HTTP_PORT: "x" });
    const { code } = await service.finished;
    assert.equal(code, 1);
    const lines = service
      .stderr()
      .split("\n")
      .filter((l) => l.trim() !== "");
    assert.equal(lines.length, 2, `expected two lines, got:\n${service.stderr()}`);
    const grpc = lines.filter((l) => l.includes("GRPC_PORT"));
    const http = lines.filter((l) => l.includes("HTTP_PORT"));
    assert.equal(grpc.length, 1);
    assert.equal(http.length, 1);
    assert.match(grpc[0]!, /GRPC_PORT: expected an integer from 0 to 65535/);
    assert.match(http[0]!, /HTTP_PORT: expected an integer from 0 to 65535/);
    assert.equal(
      service.logs.find((l) => l.msg === "ready"),
      undefined,
    );
  });

  test("an HTTP port already in use exits 1 with a message naming the port", { timeout: TEST_TIMEOUT_MS }, async () => {
    await withBusyPort(async (port) => {
      const service = startServiceProcess(FIXTURE_MAIN, { HTTP_PORT: String(port) });
      const { code } = await service.finished;
      assert.equal(code, 1);
      assert.equal(
        service.logs.find((l) => l.msg === "ready"),
        undefined,
        "never reports ready",
      );
      const failure = service.logs.find((l) => typeof l.msg === "string" && l.msg.includes(`:${port}`));
      assert.ok(
        failure,
        `no log line names port ${port}; stdout:\n${service.logs.map((l) => JSON.stringify(l)).join("\n")}\nstderr:\n${service.stderr()}`,
      );
      assert.match(String(failure.msg), /HTTP/);
      assert.match(String(failure.msg), /EADDRINUSE|in use/);
      assert.equal(failure.level, "fatal");
    });
  });
});
