// Writing a plan: the files, then oxfmt over the TypeScript among them, then `make generate` when a proto changed.
import { execFileSync } from "node:child_process";
import fs from "node:fs";
import path from "node:path";
import { forgetProtos } from "./proto-file.js";
import { type Change, GeneratorError } from "./repo.js";

/** Writes the planned files, formats the TypeScript among them and regenerates src/gen/ when a proto changed. */
export function apply(root: string, changes: Change[], options: { generate: boolean }): string {
  // A second check right before writing: nothing is written if any file to create has appeared meanwhile.
  for (const c of changes) if (c.create && fs.existsSync(path.join(root, c.path))) throw new GeneratorError(`${c.path} exists already`);
  forgetProtos();
  for (const c of changes) {
    fs.mkdirSync(path.dirname(path.join(root, c.path)), { recursive: true });
    fs.writeFileSync(path.join(root, c.path), c.text, c.create ? { flag: "wx" } : {});
  }
  const ts = changes.filter((c) => c.path.endsWith(".ts")).map((c) => c.path);
  if (ts.length > 0) run(root, "node_modules/.bin/oxfmt", ts, "formatting with oxfmt");
  if (options.generate && changes.some((c) => c.path.endsWith(".proto")))
    run(root, "make", ["--no-print-directory", "generate"], "make generate");
  return changes.map((c) => c.path).join(", ");
}

function run(root: string, cmd: string, args: string[], what: string): void {
  try {
    execFileSync(cmd.includes("/") ? path.join(root, cmd) : cmd, args, { cwd: root, stdio: ["ignore", "pipe", "pipe"] });
  } catch (err) {
    const e = err as { stdout?: Buffer; stderr?: Buffer };
    const out = `${e.stdout ?? ""}${e.stderr ?? ""}`.trim() || String(err);
    throw new GeneratorError(`the files are written, but ${what} failed: ${out.split("\n").slice(-5).join(" | ")}`);
  }
}
