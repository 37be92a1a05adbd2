// Steps after the files are written: npm install and the initial git commit. A failure keeps the files
// and names the commands that finish the job by hand.
import { spawn, spawnSync } from "node:child_process";
import type { Choices } from "./env-file.js";
import { Interrupted, StepError } from "./errors.js";

export interface Step {
  /** Shown as "<title> failed". */
  title: string;
  /** Shell command that does the same by hand, run in the target directory. */
  command: string;
  /** Resolves with an optional warning; rejects with an Error whose message is the detail. */
  run: (dir: string) => Promise<string | undefined>;
}

const COMMIT_MESSAGE = "Initial commit from create-grpc-svc";
const isWindows = process.platform === "win32";

/** POSIX shell quoting for paths shown in messages. */
export function shellQuote(s: string): string {
  return /^[A-Za-z0-9_./:@%+=,-]+$/.test(s) ? s : `'${s.replace(/'/g, `'\\''`)}'`;
}

export const npmInstallStep: Step = {
  title: "npm install",
  command: "npm install --no-audit --no-fund",
  run: (dir) =>
    new Promise((resolve, reject) => {
      // stdio inherited: npm's own progress is the output; a shell is needed for npm.cmd on Windows.
      // Ctrl-C reaches npm too (one process group); this process stays alive to say what was written and how to
      // finish. A signal sent to this process alone is passed on to npm. Listening before npm starts: a signal
      // in between would otherwise end this process and leave npm running.
      let interrupted: NodeJS.Signals | undefined;
      const onSignal = (signal: NodeJS.Signals) => {
        interrupted = signal;
        if (child.exitCode === null && child.signalCode === null) child.kill(signal);
      };
      process.on("SIGINT", onSignal);
      process.on("SIGTERM", onSignal);
      const child = spawn("npm", ["install", "--no-audit", "--no-fund"], { cwd: dir, stdio: "inherit", shell: isWindows });
      child.on("error", (err) => reject(new Error(err.message)));
      child.on("close", (code, signal) => {
        process.off("SIGINT", onSignal);
        process.off("SIGTERM", onSignal);
        // npm may die of the group's Ctrl-C before this process has run its own handler for it.
        const by = interrupted ?? (signal === "SIGINT" || signal === "SIGTERM" ? signal : undefined);
        if (by) reject(new Interrupted(by));
        else if (code === 0) resolve(undefined);
        else reject(new Error(signal ? `killed by ${signal}` : `exit code ${code}`));
      });
    }),
};

function git(dir: string, args: string[]): { ok: boolean; out: string; err: string; missing: boolean } {
  const r = spawnSync("git", args, { cwd: dir, encoding: "utf8", stdio: ["ignore", "pipe", "pipe"] });
  const missing = (r.error as NodeJS.ErrnoException | undefined)?.code === "ENOENT";
  return { ok: r.status === 0, out: r.stdout ?? "", err: (r.stderr ?? r.error?.message ?? "").trim(), missing };
}

export const gitStep: Step = {
  title: "git",
  command: `git init -b main && git add -A && git commit -m "${COMMIT_MESSAGE}"`,
  run: async (dir) => {
    if (git(dir, ["--version"]).missing) return "git was not found, so no repository was created";
    const must = (args: string[]) => {
      const r = git(dir, args);
      if (!r.ok) throw new Error(`git ${args.find((a) => !a.startsWith("-"))}: ${r.err.split("\n").pop() || "failed"}`);
    };
    must(["init", "-q", "-b", "main"]);
    must(["add", "-A"]);
    // Without a configured identity git refuses to commit; use a neutral one for this commit only.
    const hasIdentity = git(dir, ["config", "user.name"]).out.trim() !== "" && git(dir, ["config", "user.email"]).out.trim() !== "";
    const identity = hasIdentity ? [] : ["-c", "user.name=create-grpc-svc", "-c", "user.email=create-grpc-svc@localhost"];
    must([...identity, "commit", "-q", "-m", COMMIT_MESSAGE]);
    return undefined;
  },
};

export function stepsFor(choices: Choices): Step[] {
  const steps: Step[] = [];
  if (choices.install) steps.push(npmInstallStep);
  if (choices.git) steps.push(gitStep); // after install, so the commit includes the lockfile npm may update
  return steps;
}

/** Runs the steps in order; the first failure becomes a StepError listing it and every step after it. */
export async function runSteps(steps: Step[], dir: string, displayDir: string): Promise<string[]> {
  const warnings: string[] = [];
  for (const [i, step] of steps.entries()) {
    try {
      const warning = await step.run(dir);
      if (warning) warnings.push(warning);
    } catch (err) {
      const rest = steps.slice(i).map((s) => s.command);
      const signal = err instanceof Interrupted ? err.signal : undefined;
      throw new StepError(step.title, [`cd ${shellQuote(displayDir)}`, ...rest].join(" && "), (err as Error).message, signal);
    }
  }
  return warnings;
}
