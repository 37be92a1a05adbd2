// What will be generated where: the flags plus defaults (non-interactive), and the target directory check.
import fs from "node:fs";
import path from "node:path";
import type { CliArgs } from "./args.js";
import type { Choices } from "./env-file.js";
import { UsageError } from "./errors.js";
import { deriveNames, type Names, nameProblem } from "./names.js";

export interface Plan {
  /** Absolute target directory. */
  targetDir: string;
  names: Names;
  choices: Choices;
}

/** The defaults of §2.1 for whatever the flags did not set. */
export function choicesFromArgs(args: CliArgs): Choices {
  const choices: Choices = {
    auth: args.auth ?? "none",
    unixSocket: args.unixSocket ?? false,
    sse: args.sse ?? true,
    install: args.install ?? true,
    git: args.git ?? true,
  };
  if (args.adminPort !== undefined) choices.adminPort = args.adminPort;
  return choices;
}

/** Name from --name, else from the target directory's basename. */
export function nameFor(args: CliArgs, targetDir: string): string {
  if (args.name !== undefined) return args.name;
  const base = path.basename(targetDir);
  const problem = nameProblem(base);
  if (problem) throw new UsageError(`${problem} (taken from the directory name; pass --name <kebab-name>)`);
  return base;
}

export function planWithoutPrompts(args: CliArgs, cwd: string): Plan {
  const dir = args.dir ?? args.name;
  if (dir === undefined) {
    throw new UsageError("no target directory given: run create-grpc-svc <dir> [--name <kebab-name>] (see --help)");
  }
  const targetDir = path.resolve(cwd, dir);
  return { targetDir, names: deriveNames(nameFor(args, targetDir)), choices: choicesFromArgs(args) };
}

/** Why `targetDir` cannot be written to, or undefined. An existing empty directory is fine. */
export function targetProblem(targetDir: string, force: boolean): string | undefined {
  let st: fs.Stats;
  try {
    st = fs.statSync(targetDir);
  } catch {
    return undefined; // does not exist yet
  }
  if (!st.isDirectory()) return `${targetDir} exists and is not a directory`;
  if (!force && fs.readdirSync(targetDir).length > 0) {
    return `${targetDir} is not empty (use --force to write into it anyway)`;
  }
  return undefined;
}

export function assertTargetWritable(targetDir: string, force: boolean): void {
  const problem = targetProblem(targetDir, force);
  if (problem) throw new UsageError(problem);
}
