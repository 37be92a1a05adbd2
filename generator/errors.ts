// Error types that decide the exit code, and the one place that turns an error into output + code.

/** Bad input from the user: one line on stderr, exit 2, nothing written. */
export class UsageError extends Error {
  override name = "UsageError";
}

/** A step ended because the user pressed Ctrl-C (or the process was told to stop). */
export class Interrupted extends Error {
  override name = "Interrupted";
  constructor(readonly signal: NodeJS.Signals) {
    super(`interrupted by ${signal}`);
  }
}

/**
 * A post-render step failed or was interrupted: the files stay, the user gets what was written and the command
 * to finish by hand (exit 1, or 130 after Ctrl-C).
 */
export class StepError extends Error {
  override name = "StepError";
  /** What is on disk, e.g. "128 files in ./my-svc"; set by the CLI, which knows. */
  written?: string;
  constructor(
    readonly step: string,
    readonly rerun: string,
    detail: string,
    readonly signal?: NodeJS.Signals,
  ) {
    super(signal ? `${step} was interrupted (${signal})` : `${step} failed${detail ? ` (${detail})` : ""}`);
  }
}

export const PREFIX = "create-grpc-svc: ";

/** @inquirer/prompts throws ExitPromptError on Ctrl-C; @inquirer/core is not our direct dependency, so match by name. */
export function isPromptExit(err: unknown): boolean {
  return err instanceof Error && err.name === "ExitPromptError";
}

/** Writes the message for a fatal error and returns the process exit code. */
export function reportError(err: unknown, write: (line: string) => void): number {
  if (isPromptExit(err)) {
    write(`${PREFIX}cancelled\n`);
    return 130;
  }
  if (err instanceof UsageError) {
    // Exactly one line, whatever the message holds.
    write(`${PREFIX}${err.message.split("\n")[0]}\n`);
    return 2;
  }
  if (err instanceof StepError) {
    const kept = err.written ? `The generated files (${err.written}) are kept` : "The generated files are kept";
    write(`${PREFIX}${err.message}. ${kept}; to finish, run:\n  ${err.rerun}\n`);
    return err.signal === "SIGINT" ? 130 : err.signal ? 143 : 1;
  }
  const message = err instanceof Error ? err.message : String(err);
  write(`${PREFIX}${message}\n`);
  return 1;
}
