// Three-way text merge of one file with `git merge-file`. Chosen over a JS library (node-diff3): it is git's
// own merge (xdiff), so the result and the conflict markers are exactly what the user's `git merge` would
// produce and what their editor's merge tools recognise, it adds no dependency to `npm create`, and git is
// already required (the dirty-tree check, the initial commit). It works outside a repository.
import { spawnSync } from "node:child_process";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";

export interface TextMerge {
  text: string;
  /** Number of conflicting hunks (marked in `text`). */
  conflicts: number;
}

export interface MergeLabels {
  ours: string;
  base: string;
  theirs: string;
}

/** Merges the change base → theirs into ours. Throws when git is missing or fails. */
export function mergeText(ours: string, base: string, theirs: string, labels: MergeLabels): TextMerge {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "cgs-merge-"));
  try {
    const file = (name: string, text: string) => {
      const p = path.join(dir, name);
      fs.writeFileSync(p, text);
      return p;
    };
    const args = ["merge-file", "-p", "-L", labels.ours, "-L", labels.base, "-L", labels.theirs];
    const r = spawnSync("git", [...args, file("ours", ours), file("base", base), file("theirs", theirs)], {
      encoding: "utf8",
      maxBuffer: 256 * 1024 * 1024,
    });
    if (r.error) {
      const missing = (r.error as NodeJS.ErrnoException).code === "ENOENT";
      throw new Error(missing ? "git is needed for update (git merge-file) but was not found" : `git merge-file: ${r.error.message}`);
    }
    // Exit status: the number of conflicts (capped at 127), or 255 on error.
    if (r.status === null || r.status > 127) throw new Error(`git merge-file failed: ${(r.stderr || "").trim() || `status ${r.status}`}`);
    return { text: r.stdout, conflicts: r.status };
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
}
