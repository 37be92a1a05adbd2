// What `update` prints: each change and conflict, the template's changes to files of yours as diffs, and the
// commands to run next.
import { spawnSync } from "node:child_process";
import fs from "node:fs";
import path from "node:path";
import type { FileChange, Note, UpdatePlan } from "./update-plan.js";

const LABEL: Record<FileChange["kind"], string> = {
  updated: "updated",
  merged: "merged",
  added: "added",
  removed: "removed",
  conflict: "CONFLICT",
};

const NOTE: Record<Note["kind"], string> = {
  "kept-removed": "removed from the template, but you changed it: kept",
  "kept-deleted": "you deleted it; the template changed it: not restored",
  "kept-lockfile": "you changed it: kept; `npm install` brings it in line with package.json",
  "yours-changed": "yours, not touched; the template changed it: diff below",
};

export interface ReportInput {
  from: string;
  to: string;
  source: string;
  dryRun: boolean;
  baseDir: string;
  theirsDir: string;
}

export function report(plan: UpdatePlan, r: ReportInput): string {
  const lines: string[] = [`${r.dryRun ? "Dry run: " : ""}create-grpc-svc update ${r.from} → ${r.to} (base: ${r.source})`, ""];
  const order: FileChange["kind"][] = ["updated", "merged", "added", "removed", "conflict"];
  const changes = [...plan.changes].sort((a, b) => order.indexOf(a.kind) - order.indexOf(b.kind) || a.path.localeCompare(b.path));
  for (const c of changes) {
    lines.push(`  ${LABEL[c.kind].padEnd(9)} ${c.path}${c.detail ? `  (${c.detail})` : ""}`);
    for (const k of c.keyConflicts ?? []) {
      const show = (v: unknown) => (v === undefined ? "(absent)" : JSON.stringify(v));
      lines.push(`            ${k.key}: yours ${show(k.ours)}, new template ${show(k.theirs)}, old template ${show(k.base)}`);
    }
  }
  for (const n of plan.notes) lines.push(`  ${"kept".padEnd(9)} ${n.path}  (${NOTE[n.kind]})`);
  if (changes.length === 0 && plan.notes.length === 0) lines.push("  nothing changed: the framework files already match");
  const conflicts = changes.filter((c) => c.kind === "conflict");
  const touched = changes.length > 0;

  const diffs = plan.notes.filter((n) => n.kind === "yours-changed").map((n) => templateDiff(n.path, r));
  if (diffs.length > 0) lines.push("", "The template changed these files of yours; apply what you want of it by hand:", "", ...diffs);

  lines.push("");
  if (r.dryRun) lines.push("Nothing was written (--dry-run).");
  if (conflicts.length > 0) {
    lines.push(
      `${conflicts.length} conflict${conflicts.length === 1 ? "" : "s"}${r.dryRun ? " would need resolving" : ""}: edit the files marked CONFLICT` +
        " (`git diff --check` lists the markers left; package.json keys are listed above and keep your value), then commit.",
    );
  }
  // make test-framework too: the framework is what changed, and its own suite is what covers it.
  // Biome → oxfmt: your own files were formatted by Biome, which lays some code out differently (make lint checks it).
  const reformat = fs.existsSync(path.join(r.baseDir, "biome.json")) && fs.existsSync(path.join(r.theirsDir, ".oxfmtrc.json"));
  const oxfmt = "npx oxfmt src test generators";
  if (!r.dryRun && touched) {
    lines.push("Review with `git diff`, then run:", "  npm install");
    if (reformat) lines.push(`  ${oxfmt}   # once: the formatter is now oxfmt (was Biome); it reformats your own code`);
    lines.push("  make generate", "  make test test-framework");
  }
  if (r.dryRun && touched) {
    lines.push(
      `To apply it: commit or stash your changes, run update without --dry-run, then npm install,${reformat ? ` ${oxfmt},` : ""} make generate, make test test-framework.`,
    );
  }
  return `${lines.join("\n")}\n`;
}

/** base → theirs of one file, as a unified diff with repo-relative names (a/<path>, b/<path>). */
function templateDiff(rel: string, r: ReportInput): string {
  const work = path.dirname(r.baseDir);
  const side = (dir: string) => (fs.existsSync(path.join(dir, rel)) ? `${path.basename(dir)}/${rel}` : "/dev/null");
  const d = spawnSync("git", ["diff", "--no-index", "--no-color", "--", side(r.baseDir), side(r.theirsDir)], { cwd: work, encoding: "utf8" });
  const [a, b] = [`a/${path.basename(r.baseDir)}/`, `b/${path.basename(r.theirsDir)}/`];
  return (d.stdout ?? "").split(a).join("a/").split(b).join("b/").trimEnd();
}
