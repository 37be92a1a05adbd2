// What `update` does to each file, decided from three renders of the same repo: base (the recorded version's
// template), theirs (the running version's) and ours (the repo). Pure apart from reading the three trees;
// nothing is written here, so --dry-run and the real run share every decision.
import { isUtf8 } from "node:buffer";
import fs from "node:fs";
import path from "node:path";
import { type KeyConflict, mergePackageJson } from "./merge-package-json.js";
import { type MergeLabels, mergeText } from "./merge-text.js";

export type ChangeKind =
  | "updated" // untouched by you: replaced by the new template's version
  | "merged" // both sides changed it, no overlap
  | "added" // new in the template
  | "removed" // gone from the template and unchanged by you
  | "conflict"; // overlapping edits: conflict markers written (or, for package.json, keys listed)

export type NoteKind =
  | "kept-removed" // gone from the template, but you changed it: kept
  | "kept-deleted" // you deleted it; the template changed it: not restored
  | "kept-lockfile" // you changed package-lock.json: kept, npm install reconciles it
  | "yours-changed"; // yours (never written), but the template changed it

export interface FileChange {
  path: string;
  kind: ChangeKind;
  /** New content; absent for "removed". */
  content?: Buffer;
  /** File mode for new files and files replaced whole. */
  mode?: number;
  detail?: string;
  keyConflicts?: KeyConflict[];
}

export interface Note {
  path: string;
  kind: NoteKind;
}

export interface UpdatePlan {
  changes: FileChange[];
  notes: Note[];
}

export interface PlanInput {
  /** Rendered old and new templates (directories). */
  baseDir: string;
  theirsDir: string;
  /** The generated repository. */
  oursDir: string;
  /** Rendered paths that are the user's (see ownership.ts); never written. */
  yours: ReadonlySet<string>;
  /** Rendered paths update never considers (.env, the record itself). */
  ignored: ReadonlySet<string>;
  labels: MergeLabels;
}

/** Regular files below `dir`, as sorted forward-slash relative paths. */
export function listTree(dir: string): string[] {
  const out: string[] = [];
  const walk = (rel: string) => {
    for (const e of fs.readdirSync(path.join(dir, rel), { withFileTypes: true })) {
      const child = rel ? `${rel}/${e.name}` : e.name;
      if (e.isDirectory()) walk(child);
      else if (e.isFile()) out.push(child);
    }
  };
  walk("");
  return out.sort();
}

/** A regular file's bytes; undefined when absent. Anything else (a directory, a symlink) is reported as such. */
function readRegular(file: string): Buffer | undefined | "not-a-file" {
  let st: fs.Stats;
  try {
    st = fs.lstatSync(file);
  } catch {
    return undefined;
  }
  return st.isFile() ? fs.readFileSync(file) : "not-a-file";
}

const eq = (a: Buffer | undefined, b: Buffer | undefined) => (a === undefined ? b === undefined : b !== undefined && a.equals(b));

export function planUpdate(input: PlanInput): UpdatePlan {
  const { baseDir, theirsDir, oursDir, yours, ignored, labels } = input;
  const baseFiles = new Set(listTree(baseDir));
  const theirsFiles = new Set(listTree(theirsDir));
  const all = [...new Set([...baseFiles, ...theirsFiles])].filter((p) => !ignored.has(p)).sort();
  const plan: UpdatePlan = { changes: [], notes: [] };

  for (const rel of all) {
    const base = baseFiles.has(rel) ? fs.readFileSync(path.join(baseDir, rel)) : undefined;
    const theirs = theirsFiles.has(rel) ? fs.readFileSync(path.join(theirsDir, rel)) : undefined;
    if (eq(base, theirs)) continue; // the template did not change it: whatever the repo has stays
    const oursRead = readRegular(path.join(oursDir, rel));
    if (yours.has(rel)) {
      // Shown as a diff to apply by hand, unless the repo already has the new version's content.
      if (oursRead === "not-a-file" || !eq(oursRead, theirs)) plan.notes.push({ path: rel, kind: "yours-changed" });
      continue;
    }
    if (oursRead === "not-a-file") {
      plan.changes.push({ path: rel, kind: "conflict", detail: "not a regular file in your repo; left as it is" });
      continue;
    }
    const ours = oursRead;
    const mode = theirs ? fs.statSync(path.join(theirsDir, rel)).mode & 0o777 : undefined;

    if (eq(ours, theirs)) continue; // already what the new template has
    if (theirs === undefined) {
      // Removed from the template.
      if (ours === undefined) continue;
      if (eq(ours, base)) plan.changes.push({ path: rel, kind: "removed" });
      else plan.notes.push({ path: rel, kind: "kept-removed" });
      continue;
    }
    if (ours === undefined) {
      if (base === undefined) plan.changes.push({ path: rel, kind: "added", content: theirs, mode });
      else plan.notes.push({ path: rel, kind: "kept-deleted" });
      continue;
    }
    if (eq(ours, base)) {
      plan.changes.push({ path: rel, kind: "updated", content: theirs, mode });
      continue;
    }
    // Changed on both sides (or added on both sides with different content).
    if (rel === "package-lock.json") {
      plan.notes.push({ path: rel, kind: "kept-lockfile" });
      continue;
    }
    if (rel === "package.json" && base !== undefined) {
      plan.changes.push(packageJsonChange(ours, base, theirs));
      continue;
    }
    if (!isUtf8(ours) || !isUtf8(theirs) || (base !== undefined && !isUtf8(base))) {
      plan.changes.push({ path: rel, kind: "conflict", detail: "binary file changed on both sides; yours is kept" });
      continue;
    }
    // Added on both sides: an empty base makes every difference a conflict, never a silent pick.
    const m = mergeText(ours.toString("utf8"), base?.toString("utf8") ?? "", theirs.toString("utf8"), labels);
    plan.changes.push({
      path: rel,
      kind: m.conflicts > 0 ? "conflict" : "merged",
      content: Buffer.from(m.text, "utf8"),
      ...(m.conflicts > 0 ? { detail: `${m.conflicts} conflict${m.conflicts === 1 ? "" : "s"} marked` } : {}),
    });
  }
  return plan;
}

function packageJsonChange(ours: Buffer, base: Buffer, theirs: Buffer): FileChange {
  const m = mergePackageJson(ours.toString("utf8"), base.toString("utf8"), theirs.toString("utf8"));
  const content = Buffer.from(m.text, "utf8");
  if (m.conflicts.length > 0) {
    return {
      path: "package.json",
      kind: "conflict",
      content,
      keyConflicts: m.conflicts,
      detail: `${m.conflicts.length} key${m.conflicts.length === 1 ? "" : "s"} changed on both sides; yours kept`,
    };
  }
  return { path: "package.json", kind: "merged", content, detail: [...m.changed].sort().join(", ") };
}
