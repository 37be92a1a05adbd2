/**
 * The service as a real child process, for tests of what only a process shows: signals,
 * exit codes, stderr. Configuration comes only from an allowlist of the test runner's
 * environment plus the test's settings — never from the developer's shell or .env.
 */
import { type ChildProcess, spawn } from "node:child_process";
import { once } from "node:events";
import { createServer } from "node:net";
import { createInterface } from "node:readline";
import { fileURLToPath } from "node:url";

const TEMPLATE_DIR = fileURLToPath(new URL("../../..", import.meta.url));

export type LogLine = Record<string, unknown>;

export interface ServiceProcess {
  child: ChildProcess;
  /** Parsed stdout JSON lines so far, in order. */
  logs: LogLine[];
  /** Raw stdout lines that were not JSON. */
  otherStdout: string[];
  stderr: () => string;
  /** Resolves with the first log line (already seen or still to come) that matches; rejects if the process ends first. */
  waitForLog: (what: string, match: (line: LogLine) => boolean) => Promise<LogLine>;
  /** Resolves once the process has exited and its output has ended; `at` is when it exited. */
  finished: Promise<{ code: number | null; signal: NodeJS.Signals | null; at: number }>;
}

/** The fixture service (test/proto/fixture/) as a process: what the framework tests start instead of your src/main.ts. */
export const FIXTURE_MAIN = "test/framework/fixtures/fixture-main.ts";

const running: ChildProcess[] = [];

/** Starts `entry` (relative to the template, e.g. FIXTURE_MAIN) on free loopback ports. */
export function startServiceProcess(
  entry: string,
  settings: Record<string, string> = {},
  options: {
    /** Runs node through another command, given node's path and arguments (e.g. `unshare` for a private /etc/hosts). */
    wrap?: (argv: string[]) => string[];
  } = {},
): ServiceProcess {
  const env: Record<string, string> = {};
  for (const name of ["PATH", "HOME", "TMPDIR", "LANG", "SYSTEMROOT"]) {
    const value = process.env[name];
    if (value !== undefined) env[name] = value;
  }
  const [file, ...args] = (options.wrap ?? ((argv) => argv))([process.execPath, "--import", "tsx", entry]);
  const child = spawn(file!, args, {
    cwd: TEMPLATE_DIR,
    env: {
      ...env,
      LISTEN_HOST: "127.0.0.1",
      GRPC_PORT: "0",
      HTTP_PORT: "0",
      GRPC_GRACEFUL_DURATION_IN_SECONDS: "1",
      SHUTDOWN_DURATION_IN_SECONDS: "5",
      // As startTestServer: a loaded test machine must not make overload protection refuse a test's calls.
      OVERLOAD_MAX_EVENT_LOOP_DELAY_MS: "0",
      OVERLOAD_MAX_EVENT_LOOP_UTILIZATION: "0",
      ...settings,
    },
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
  const exited = once(child, "exit").then(([code, signal]) => ({
    code: code as number | null,
    signal: signal as NodeJS.Signals | null,
    at: Date.now(),
  }));
  // stdout may still hold lines when "exit" fires; "close" means every stream has ended.
  const closed = once(child, "close");
  const dump = () => `stderr:\n${stderr}\nstdout:\n${logs.map((l) => JSON.stringify(l)).join("\n")}`;
  return {
    child,
    logs,
    otherStdout,
    stderr: () => stderr,
    finished: closed.then(() => exited),
    waitForLog: (what, match) => {
      const seen = logs.find(match);
      if (seen) return Promise.resolve(seen);
      return new Promise<LogLine>((resolve, reject) => {
        waiters.push({ match, resolve });
        closed.then(() => reject(new Error(`the service exited before logging ${what}; ${dump()}`)));
      });
    },
  };
}

/** Kills whatever a test left running (use in afterEach). */
export async function killServiceProcesses(): Promise<void> {
  for (const child of running.splice(0)) {
    if (child.exitCode === null && child.signalCode === null) {
      const exit = once(child, "exit");
      child.kill("SIGKILL");
      await exit;
    }
  }
}

/** Holds a loopback port for the duration of `fn`. */
export async function withBusyPort<T>(fn: (port: number) => Promise<T>): Promise<T> {
  const blocker = createServer();
  blocker.listen(0, "127.0.0.1");
  await once(blocker, "listening");
  try {
    return await fn((blocker.address() as { port: number }).port);
  } finally {
    blocker.close();
    await once(blocker, "close");
  }
}
