// The repository a generator changes: its fixed paths, reads relative to its root, and the Change a plan is
// made of. Nothing here writes (apply.ts does, once every check has passed).
import fs from "node:fs";
import path from "node:path";

/** A refused input or a repository the generator cannot edit: printed as one line, exit code 1. */
export class GeneratorError extends Error {}

export const MAIN = "src/main.ts";
export const FRAMEWORK_INDEX = "src/framework/index.ts";

/** One file the generator writes: created (must not exist) or replaced (read before planning). */
export interface Change {
  path: string;
  text: string;
  create: boolean;
}

export const read = (root: string, rel: string) => fs.readFileSync(path.join(root, rel), "utf8");
export const exists = (root: string, rel: string) => fs.existsSync(path.join(root, rel));

/** `import` path of `to` (a repo-relative .ts file) from the file `from`: `../framework/index.js`. */
export function importPath(from: string, to: string): string {
  const rel = path.posix.relative(path.posix.dirname(from), to.replace(/\.ts$/, ".js"));
  return rel.startsWith(".") ? rel : `./${rel}`;
}
