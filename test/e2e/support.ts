// Shared by the end-to-end tests: running real commands (npm, make, git) as a user would, with stdin closed.
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import path from "node:path";
import { fileURLToPath } from "node:url";

export const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../..");
export const MINUTE = 60_000;

export interface Result {
  code: number | null;
  signal: NodeJS.Signals | null;
  output: string;
  /** stdout alone, for commands whose report is asserted. */
  stdout: string;
  ms: number;
}

// Leaks from an outer `npm run`, `make` or `node --test` would change how the nested tools behave
// (NODE_TEST_CONTEXT, for one, turns a nested `node --test` into a silent child of ours).
export function childEnv(extra: NodeJS.ProcessEnv = {}): NodeJS.ProcessEnv {
  const env = { ...process.env };
  for (const key of Object.keys(env)) {
    if (/^(npm_package_|npm_lifecycle_|npm_config_local_prefix$|npm_command$|INIT_CWD$|MAKEFLAGS$|MFLAGS$|MAKELEVEL$|NODE_TEST_CONTEXT$)/.test(key)) {
      delete env[key];
    }
  }
  return { ...env, ...extra };
}

/** Runs a command with stdin closed (never a TTY); on timeout kills its whole process group. */
export function run(cmd: string, args: string[], cwd: string, timeoutMs: number, env: NodeJS.ProcessEnv = {}): Promise<Result> {
  return new Promise((resolve, reject) => {
    const started = performance.now();
    const child = spawn(cmd, args, { cwd, env: childEnv(env), stdio: ["ignore", "pipe", "pipe"], detached: true });
    let output = "";
    let stdout = "";
    child.stdout.on("data", (d: Buffer) => {
      output += d;
      stdout += d;
    });
    child.stderr.on("data", (d: Buffer) => (output += d));
    const timer = setTimeout(() => {
      output += `\n[killed after ${timeoutMs} ms]`;
      try {
        process.kill(-(child.pid as number), "SIGKILL");
      } catch {}
    }, timeoutMs);
    child.on("error", reject);
    child.on("close", (code, signal) => {
      clearTimeout(timer);
      resolve({ code, signal, output, stdout, ms: Math.round(performance.now() - started) });
    });
  });
}

/** On failure, shows each failing node:test subtest (with its error) and the last lines of output. */
export function assertOk(r: Result, what: string): void {
  if (r.code === 0) return;
  const lines = r.output.split("\n");
  const failures = lines.flatMap((l, i) => (/^\s*not ok /.test(l) && !/subtestsFailed/.test(lines.slice(i, i + 8).join("\n")) ? lines.slice(i, i + 25) : []));
  const report = [...failures.slice(0, 200), "...", ...lines.slice(-30)].join("\n");
  assert.fail(`${what} failed (exit ${r.code ?? r.signal}):\n${report}`);
}
