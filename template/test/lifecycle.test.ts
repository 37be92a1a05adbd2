/**
 * The real service as a child process: start-up, readiness, graceful shutdown on
 * SIGTERM, and start-up failures. Configuration comes only from the allowlist below,
 * never from the developer's shell.
 */
import assert from "node:assert/strict";
import { type ChildProcess, spawn } from "node:child_process";
import { once } from "node:events";
import { createServer, type Server } from "node:net";
import { createInterface } from "node:readline";
import { afterEach, describe, test } from "node:test";
import { setTimeout as sleep } from "node:timers/promises";
import { fileURLToPath } from "node:url";
import { readPackageJson } from "../src/framework/health/build-info.js";

const TEMPLATE_DIR = fileURLToPath(new URL("..", import.meta.url));
const TEST_TIMEOUT_MS = 30_000;

type LogLine = Record<string, unknown>;

interface Service {
  child: ChildProcess;
  /** Parsed stdout JSON lines so far, in order. */
  logs: LogLine[];
  /** Raw stdout lines that were not JSON. */
  otherStdout: string[];
  stderr: () => string;
  /** Resolves with the first log line (already seen or still to come) that matches; rejects if the process exits first. */
  waitForLog: (what: string, match: (line: LogLine) => boolean) => Promise<LogLine>;
  exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
}

const running: ChildProcess[] = [];

/** Only what node needs to run, plus the test's settings: no JWT_SECRET, API_KEYS or anything else from the shell. */
function childEnv(settings: Record<string, string>): Record<string, string> {
  const env: Record<string, string> = {};
  for (const name of ["PATH", "HOME", "TMPDIR", "LANG", "SYSTEMROOT"]) {
    const value = process.env[name];
    if (value !== undefined) env[name] = value;
  }
  return {
    ...env,
    LISTEN_HOST: "127.0.0.1",
    GRPC_PORT: "0",
    HTTP_PORT: "0",
    GRPC_GRACEFUL_DURATION_IN_SECONDS: "1",
    SHUTDOWN_DURATION_IN_SECONDS: "5",
    ...settings,
  };
}

function startService(settings: Record<string, string> = {}): Service {
  const child = spawn(process.execPath, ["--import", "tsx", "src/main.ts"], {
    cwd: TEMPLATE_DIR,
    env: childEnv(settings),
    stdio: ["ignore", "pipe", "pipe"],
  });
  running.push(child);
  const logs: LogLine[] = [];
  const otherStdout: string[] = [];
  let stderr = "";
  child.stderr!.setEncoding("utf8").on("data", (chunk: string) => {
    stderr += chunk;
  });
  const waiters: { match: (line: LogLine) => boolean; resolve: (line: LogLine) => void }[] = [];
  createInterface({ input: child.stdout! }).on("line", (text) => {
    let line: LogLine;
    try {
      line = JSON.parse(text) as LogLine;
    } catch {
      otherStdout.push(text);
      return;
    }
    logs.push(line);
    for (const w of [...waiters]) {
      if (w.match(line)) {
        waiters.splice(waiters.indexOf(w), 1);
        w.resolve(line);
      }
    }
  });
  const exited = once(child, "exit").then(([code, signal]) => ({ code: code as number | null, signal: signal as NodeJS.Signals | null }));
  // stdout may still hold lines when "exit" fires; "close" means every stream has ended.
  const closed = once(child, "close");
  return {
    child,
    logs,
    otherStdout,
    stderr: () => stderr,
    exited,
    waitForLog: (what, match) => {
      const seen = logs.find(match);
      if (seen) return Promise.resolve(seen);
      return new Promise<LogLine>((resolve, reject) => {
        waiters.push({ match, resolve });
        closed.then(() =>
          reject(
            new Error(
              `the service exited before logging ${what}; stderr:\n${stderr}\nstdout:\n${logs.map((l) => JSON.stringify(l)).join("\n")}`,
            ),
          ),
        );
      });
    },
  };
}

/** Resolves once every stream of the child has closed, so its output is complete. */
async function finished(service: Service): Promise<{ code: number | null; signal: NodeJS.Signals | null }> {
  const result = await service.exited;
  if (service.child.stdout && !service.child.stdout.readableEnded) await once(service.child.stdout, "end");
  if (service.child.stderr && !service.child.stderr.readableEnded) await once(service.child.stderr, "end");
  return result;
}

afterEach(async () => {
  for (const child of running.splice(0)) {
    if (child.exitCode === null && child.signalCode === null) {
      const exit = once(child, "exit");
      child.kill("SIGKILL");
      await exit;
    }
  }
});

describe("the service process", () => {
  test("drains on SIGTERM: readiness turns 503, an in-flight request completes, exit 0", { timeout: TEST_TIMEOUT_MS }, async () => {
    // debug level makes the echo handler log "echo received", which tells us the slow call has arrived.
    const service = startService({ LOG_LEVEL: "debug" });
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

    const { code, signal } = await finished(service);
    assert.equal(signal, null);
    assert.equal(code, 0, `exit code; stderr:\n${service.stderr()}`);

    const messages = service.logs.map((l) => l.msg);
    const shuttingDown = messages.indexOf("shutting down");
    const stopped = messages.indexOf("stopped");
    assert.ok(shuttingDown !== -1, "logs 'shutting down'");
    assert.ok(stopped > shuttingDown, "logs 'stopped' after 'shutting down'");
    assert.ok(messages.indexOf("ready") < shuttingDown);
    const echoLine = service.logs.find((l) => l.msg === "response time" && l.grpcMethod === "/example.v1.ExampleService/Echo");
    assert.equal(echoLine?.grpcCode, "OK", "the drained call is logged as OK");
  });

  test("a bad configuration exits 1 with one stderr line per bad variable", { timeout: TEST_TIMEOUT_MS }, async () => {
    const service = startService({ GRPC_PORT: "abc", HTTP_PORT: "x" });
    const { code } = await finished(service);
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
    const blocker: Server = createServer();
    blocker.listen(0, "127.0.0.1");
    await once(blocker, "listening");
    try {
      const address = blocker.address();
      assert.ok(address && typeof address === "object");
      const port = address.port;
      const service = startService({ HTTP_PORT: String(port) });
      const { code } = await finished(service);
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
    } finally {
      blocker.close();
      await once(blocker, "close");
    }
  });
});
