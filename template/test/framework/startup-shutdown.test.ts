/**
 * Start-up and shutdown of the service process in the documented order: the hooks, the drain
 * wait, where workers stop, the shutdown budget, a second signal, a failing preStart, ports in
 * use and settings that look like typos. Each test runs a child process with only the settings
 * it names (never the developer's shell).
 */
import assert from "node:assert/strict";
import { afterEach, describe, test } from "node:test";
import { defineService } from "../../src/framework/index.js";
import { startTestServer } from "../../src/framework/testing/harness.js";
import { FixtureService } from "../gen/fixture/v1/fixture_pb.js";
import { fixtureService } from "./fixtures/fixture-service.js";
import { FIXTURE_MAIN, killServiceProcesses, type LogLine, startServiceProcess, withBusyPort } from "./support/service-process.js";

const LIFECYCLE_FIXTURE = "test/framework/fixtures/lifecycle-service.ts";
const TIMEOUT = { timeout: 30_000 };

afterEach(killServiceProcesses);

/** The service (or the lifecycle fixture) as a process, with a short drain so the tests stay quick. */
const start = (entry: string, settings: Record<string, string>) =>
  startServiceProcess(entry, { GRPC_GRACEFUL_DURATION_IN_SECONDS: "0.5", ...settings });

/** A port that was free a moment ago (the OS picks it). */
async function freePort(): Promise<number> {
  return withBusyPort(async (port) => port);
}

/** The `hook` lines and the framework's own milestones, in the order they were logged. */
function timeline(logs: LogLine[]): string[] {
  const milestones = new Set(["starting", "ready", "signal received", "shutting down", "workers stopped", "stopped"]);
  const milestone = (msg: string) => (msg.startsWith("signal received:") ? "signal received" : msg);
  return logs.flatMap((l) =>
    l.msg === "hook" ? [String(l.hook)] : milestones.has(milestone(String(l.msg))) ? [milestone(String(l.msg))] : [],
  );
}

const at = (logs: LogLine[], match: (l: LogLine) => boolean) => Date.parse(String(logs.find(match)?.["@timestamp"]));

describe("start-up and shutdown order", () => {
  test("hooks, ready, drain wait, workers, servers, stop hooks: exactly in the documented order, exit 0", TIMEOUT, async () => {
    const [httpPort, adminPort] = [await freePort(), await freePort()];
    const svc = start(LIFECYCLE_FIXTURE, {
      HTTP_PORT: String(httpPort),
      ADMIN_PORT: String(adminPort),
      GRPC_GRACEFUL_DURATION_IN_SECONDS: "0.6",
    });
    await svc.waitForLog("ready", (l) => l.msg === "ready");
    svc.child.kill("SIGTERM");
    const { code } = await svc.finished;
    assert.equal(code, 0, svc.stderr());
    assert.deepEqual(
      timeline(svc.logs),
      [
        "starting",
        "preStart",
        "worker started", // workers start once the servers listen…
        "postStart", // …before postStart
        "ready",
        "signal received",
        "shutting down",
        "preStop",
        "failCheck",
        "worker aborted", // after the drain wait…
        "workers stopped",
        "stop", // …and every server is closed before stop
        "servers at stop",
        "postStop",
        "stopped",
      ],
      svc.logs.map((l) => JSON.stringify(l)).join("\n"),
    );
    const hook = (name: string) => svc.logs.find((l) => l.msg === "hook" && l.hook === name)!;
    assert.equal(hook("preStart").app, true, "preStart receives the app");
    assert.equal(hook("failCheck").failing, true);
    // The workers stop while the admin and HTTP servers still answer; by `stop`, both are closed.
    assert.deepEqual([hook("worker aborted").http, hook("worker aborted").admin], ["open", "open"]);
    assert.deepEqual([hook("servers at stop").http, hook("servers at stop").admin], ["ECONNREFUSED", "ECONNREFUSED"]);
    const drained = at(svc.logs, (l) => l.hook === "worker aborted") - at(svc.logs, (l) => l.hook === "failCheck");
    assert.ok(drained >= 590, `the workers stopped ${drained} ms after readiness failed; the drain wait is 600 ms`);
  });

  test("every hook is optional: the plain service starts and stops cleanly", TIMEOUT, async () => {
    const svc = start(FIXTURE_MAIN, {});
    await svc.waitForLog("ready", (l) => l.msg === "ready");
    svc.child.kill("SIGINT");
    const { code } = await svc.finished;
    assert.equal(code, 0, svc.stderr());
    assert.ok(svc.logs.some((l) => l.msg === "stopped"));
    assert.equal(
      svc.logs.find((l) => l.level === "error" || l.level === "fatal"),
      undefined,
    );
  });

  test("a preStart error aborts start-up: exit 1 with its message, nothing listens, no later hook runs", TIMEOUT, async () => {
    const svc = start(LIFECYCLE_FIXTURE, { FIXTURE_FAIL_PRE_START: "database unreachable at db:5432" });
    const { code } = await svc.finished;
    assert.equal(code, 1);
    const fatal = svc.logs.find((l) => l.level === "fatal");
    assert.ok(fatal, `no fatal line; stdout:\n${svc.logs.map((l) => JSON.stringify(l)).join("\n")}`);
    assert.match(String(fatal.msg), /^start-up failed: preStart: database unreachable at db:5432$/);
    assert.deepEqual(timeline(svc.logs), ["starting", "preStart"]);
  });

  test("the budget covers the whole stop: a preStop that never returns is cut at SHUTDOWN_DURATION_IN_SECONDS", TIMEOUT, async () => {
    const svc = start(LIFECYCLE_FIXTURE, {
      FIXTURE_HANG_PRE_STOP: "1",
      GRPC_GRACEFUL_DURATION_IN_SECONDS: "0.2",
      SHUTDOWN_DURATION_IN_SECONDS: "1.5",
    });
    await svc.waitForLog("ready", (l) => l.msg === "ready");
    const signalled = Date.now();
    svc.child.kill("SIGTERM");
    const { code, at: exitedAt } = await svc.finished;
    const took = exitedAt - signalled;
    assert.ok(took >= 1400 && took < 3000, `exited ${took} ms after SIGTERM; the budget is 1500 ms`);
    assert.equal(code, 1, "a step that overran the budget makes the exit code 1");
    assert.ok(svc.logs.some((l) => l.msg === "shutdown: preStop overran the budget" && l.level === "error"));
    // Every later step still ran, without waiting once the budget was spent: the workers' signal aborted (the
    // worker's probe no longer awaited), the servers force-stopped, the stop hooks called.
    // (What is no longer awaited may still log until the process exits: hence up to "stopped" only.)
    const steps = timeline(svc.logs);
    assert.deepEqual(steps.slice(steps.indexOf("stopped") - 5, steps.indexOf("stopped") + 1), [
      "preStop",
      "failCheck",
      "workers stopped",
      "stop",
      "postStop",
      "stopped",
    ]);
    assert.deepEqual(svc.logs.find((l) => l.msg === "workers stopped")?.stillRunning, ["recorder"]);
    assert.ok(svc.logs.some((l) => l.msg === "shutdown budget spent: servers force-stopped"));
  });

  test("a second signal during the drain exits 1 at once", TIMEOUT, async () => {
    const svc = start(FIXTURE_MAIN, { GRPC_GRACEFUL_DURATION_IN_SECONDS: "10", SHUTDOWN_DURATION_IN_SECONDS: "20" });
    await svc.waitForLog("ready", (l) => l.msg === "ready");
    svc.child.kill("SIGTERM");
    await svc.waitForLog("shutting down", (l) => l.msg === "shutting down");
    // What the first signal's line tells someone watching `make run` drain for seconds.
    const first = svc.logs.find((l) => String(l.msg).startsWith("signal received"));
    assert.equal(first?.msg, "signal received: stopping gracefully (at most 20 s); a second Ctrl-C or signal stops at once");
    const second = Date.now();
    svc.child.kill("SIGINT");
    const { code, at: exitedAt } = await svc.finished;
    assert.equal(code, 1);
    assert.ok(exitedAt - second < 1000, `exited ${exitedAt - second} ms after the second signal`);
    assert.ok(svc.logs.some((l) => l.msg === "second signal: exiting now" && l.signal === "SIGINT"));
    assert.equal(
      svc.logs.find((l) => l.msg === "stopped"),
      undefined,
      "the graceful stop did not finish",
    );
  });

  test("a hook that throws during shutdown is logged, the other steps still run, and stop() rejects at the end", TIMEOUT, async () => {
    const ran: string[] = [];
    const service = defineService(FixtureService, {
      handlers: fixtureService.handlers,
      preStop() {
        ran.push("preStop");
        throw new Error("deregistration failed");
      },
      stop: () => void ran.push("stop"),
      postStop: () => void ran.push("postStop"),
    });
    const server = await startTestServer([service]);
    await assert.rejects(server.close(), /deregistration failed/);
    assert.deepEqual(ran, ["preStop", "stop", "postStop"]);
    const line = server.logs.find((l) => l.msg === "shutdown: preStop failed");
    assert.equal(line?.level, "error");
    assert.ok(server.logs.some((l) => l.msg === "stopped"));
    await assert.rejects(fetch(`${server.httpUrl}/healthcheck`), "the HTTP server is closed");
  });
});

describe("configuration checked at start-up", () => {
  for (const listener of [
    { variable: "GRPC_PORT", name: "gRPC" },
    { variable: "HTTP_PORT", name: "HTTP" },
    { variable: "ADMIN_PORT", name: "admin" },
  ]) {
    test(`a ${listener.name} port already in use exits 1 with a line naming the port`, TIMEOUT, () =>
      withBusyPort(async (port) => {
        const svc = start(FIXTURE_MAIN, { [listener.variable]: String(port) });
        const { code } = await svc.finished;
        assert.equal(code, 1);
        assert.equal(
          svc.logs.find((l) => l.msg === "ready"),
          undefined,
        );
        const fatal = svc.logs.find((l) => l.level === "fatal");
        assert.ok(fatal, `no fatal line; ${svc.stderr()}`);
        assert.equal(
          fatal.msg,
          `start-up failed: ${listener.name}: cannot listen on 127.0.0.1:${port}: the port is already in use (EADDRINUSE): free it or change ${listener.variable}`,
        );
        assert.equal(svc.stderr(), "", "nothing but JSON lines: grpc-js's own bind error is not repeated on stderr");
      }),
    );
  }

  test(
    "grpc-js's own lines (GRPC_VERBOSITY, GRPC_TRACE) are JSON lines tagged component grpc-js, not text on stderr",
    TIMEOUT,
    async () => {
      const svc = start(FIXTURE_MAIN, { GRPC_VERBOSITY: "DEBUG", GRPC_TRACE: "server" });
      await svc.waitForLog("ready", (l) => l.msg === "ready");
      svc.child.kill("SIGTERM");
      assert.equal((await svc.finished).code, 0);
      const traces = svc.logs.filter((l) => l.component === "grpc-js");
      assert.ok(
        traces.some((l) => l.level === "info" && / \| server \| /.test(String(l.msg))),
        `a grpc-js server trace line: ${JSON.stringify(traces.slice(0, 3))}`,
      );
      assert.equal(svc.stderr(), "");
    },
  );

  test("a variable that looks like a misspelt setting is a warning, logged once, and the service still starts", TIMEOUT, async () => {
    const svc = start(FIXTURE_MAIN, { GRPC_PROT: "9000", DISABLE_PROMETEUS: "true", GRPC_TRACE: "", HTTP_PROXY: "http://proxy:3128" });
    await svc.waitForLog("ready", (l) => l.msg === "ready");
    svc.child.kill("SIGTERM");
    assert.equal((await svc.finished).code, 0);
    const warnings = svc.logs.filter((l) => l.level === "warn");
    assert.deepEqual(
      warnings.map((l) => [l.variable, l.suggestion, l.msg]),
      [
        ["DISABLE_PROMETEUS", "DISABLE_PROMETHEUS", "unknown variable DISABLE_PROMETEUS: did you mean DISABLE_PROMETHEUS?"],
        ["GRPC_PROT", "GRPC_PORT", "unknown variable GRPC_PROT: did you mean GRPC_PORT?"],
      ],
    );
    const messages = svc.logs.map((l) => l.msg);
    assert.ok(messages.lastIndexOf("unknown variable GRPC_PROT: did you mean GRPC_PORT?") < messages.indexOf("ready"), "at start-up");
  });

  test("bad values and cross-check failures are reported together, one stderr line each", TIMEOUT, async () => {
    const svc = start(FIXTURE_MAIN, {
      GRPC_PORT: "abc",
      GRPC_GRACEFUL_DURATION_IN_SECONDS: "9",
      SHUTDOWN_DURATION_IN_SECONDS: "5",
      DISABLE_DEBUG: "no",
    });
    const { code } = await svc.finished;
    assert.equal(code, 1);
    assert.deepEqual(svc.stderr().trim().split("\n"), [
      'config: GRPC_PORT: expected an integer from 0 to 65535 (got "abc")',
      'config: DISABLE_DEBUG: expected true, false, 1 or 0 (got "no")',
      "config: GRPC_GRACEFUL_DURATION_IN_SECONDS: must be less than SHUTDOWN_DURATION_IN_SECONDS (9 ≥ 5)",
    ]);
  });
});
