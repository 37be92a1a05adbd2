// Writes the new repository with node-plop: custom action types, because node-plop's add/addMany would run
// every file through Handlebars and the template is a runnable service, not a Handlebars template.
import { isUtf8 } from "node:buffer";
import fs from "node:fs";
import path from "node:path";
import nodePlop, { type NodePlopAPI } from "node-plop";
import { shapeDeployFiles } from "./deploy.js";
import { applyEnvVars, type Choices, publicVars, randomSecret, requireAuthInMain, secretVars } from "./env-file.js";
import { formatRepo } from "./format.js";
import { type FrameworkDevManifest, isFrameworkDev, prunePackageJson, pruneLockfile, readManifest } from "./framework-dev.js";
import type { Names } from "./names.js";
import { replaceChoicesBlock } from "./readme-choices.js";
import { RECORD_FILE, recordFor, stringifyRecord } from "./record.js";
import { renameContent, renamePath } from "./rename.js";

export interface RenderOptions {
  templateDir: string;
  targetDir: string;
  names: Names;
  choices: Choices;
  /** Injectable for tests; defaults to 32 random bytes. */
  secret?: () => string;
  /** Scaffolder version to record in .create-grpc-svc.json; no record is written without it (update's renders). */
  version?: string;
}

export interface RenderResult {
  /** Files written, including .env. */
  files: number;
}

// Template-local state that must never reach a generated repo.
const SKIP_DIRS = new Set(["node_modules", "dist", "coverage", ".tmp", ".git"]);
const SKIP_PATHS = new Set(["src/gen", "test/gen", "sdk"]);
/** The benchmarks' builds at the top (dist-bench/, A/B builds such as dist-a/). */
const BENCH_BUILD = /^dist-[^/]*$/;

function skipped(rel: string, isDir: boolean): boolean {
  const base = path.posix.basename(rel);
  if (isDir) return SKIP_DIRS.has(base) || SKIP_PATHS.has(rel) || BENCH_BUILD.test(rel);
  // .bench-baseline.json: the figures of the last `make bench` on this machine.
  return base === ".env" || base === ".bench-baseline.json" || base.endsWith(".tgz");
}

/**
 * Template files as forward-slash relative paths, sorted, with the skip list applied and the framework's own
 * development tooling (framework-dev.json) left out.
 */
export function listTemplateFiles(templateDir: string, manifest: FrameworkDevManifest = readManifest(templateDir)): string[] {
  const out: string[] = [];
  const walk = (rel: string) => {
    const entries = fs.readdirSync(path.join(templateDir, rel), { withFileTypes: true });
    for (const e of entries.sort((a, b) => a.name.localeCompare(b.name))) {
      const child = rel ? `${rel}/${e.name}` : e.name;
      if (skipped(child, e.isDirectory()) || isFrameworkDev(child, manifest, e.isDirectory())) continue;
      if (e.isDirectory()) walk(child);
      else if (e.isFile() || e.isSymbolicLink()) out.push(child);
    }
  };
  walk("");
  return out;
}

/** The template's text for a generated repo: package.json and its lockfile lose the framework's dev tooling. */
function templateText(rel: string, text: string, manifest: FrameworkDevManifest): string {
  if (rel === "package.json") return prunePackageJson(text, manifest);
  if (rel === "package-lock.json") return pruneLockfile(text, manifest);
  return text;
}

function copyTree(o: RenderOptions): number {
  const manifest = readManifest(o.templateDir);
  const files = listTemplateFiles(o.templateDir, manifest);
  for (const rel of files) {
    const src = path.join(o.templateDir, rel);
    const dest = path.join(o.targetDir, renamePath(rel, o.names));
    fs.mkdirSync(path.dirname(dest), { recursive: true });
    const st = fs.lstatSync(src);
    if (st.isSymbolicLink()) {
      fs.rmSync(dest, { force: true });
      fs.symlinkSync(fs.readlinkSync(src), dest);
      continue;
    }
    const bytes = fs.readFileSync(src);
    // Binary (non-UTF-8) files are copied byte-for-byte.
    const data = isUtf8(bytes) ? renameContent(rel, templateText(rel, bytes.toString("utf8"), manifest), o.names) : bytes;
    fs.writeFileSync(dest, data);
    fs.chmodSync(dest, st.mode & 0o777); // keeps the executable bit (writeFile's mode only applies on create)
  }
  return files.length;
}

function writeEnvFiles(o: RenderOptions): string {
  const examplePath = path.join(o.targetDir, ".env.example");
  const hasExample = fs.existsSync(examplePath);
  const example = applyEnvVars(hasExample ? fs.readFileSync(examplePath, "utf8") : "", publicVars(o.choices));
  if (hasExample) fs.writeFileSync(examplePath, example);
  const envPath = path.join(o.targetDir, ".env");
  fs.writeFileSync(envPath, applyEnvVars(example, secretVars(o.choices, o.secret ?? randomSecret)), { mode: 0o600 });
  fs.chmodSync(envPath, 0o600); // also when --force overwrote an existing .env
  return envPath;
}

// .env holds the generated secrets and must never reach the initial commit, whatever the template's _gitignore says.
const MUST_IGNORE = [".env", "node_modules/"];

/** Appends the entries `text` does not already ignore (as `x`, `/x`, `x/` or `/x/`). */
export function ensureIgnored(text: string, entries: readonly string[]): string {
  const lines = new Set(text.split(/\r?\n/).map((l) => l.trim().replace(/^\//, "").replace(/\/$/, "")));
  const missing = entries.filter((e) => !lines.has(e.replace(/\/$/, "")));
  if (missing.length === 0) return text;
  const sep = text === "" || text.endsWith("\n") ? "" : "\n";
  return `${text}${sep}${missing.join("\n")}\n`;
}

/** Keys of the data object node-plop hands to every action (not Handlebars data; we render nothing with it). */
interface RenderData {
  render: RenderOptions;
  counted: { files: number };
}

function registerActions(plop: NodePlopAPI): void {
  // Action functions get node-plop's untyped answers object; it is always our RenderData.
  const opts = (answers: unknown) => (answers as RenderData).render;

  plop.setActionType("copyTemplate", (answers) => {
    const n = copyTree(opts(answers));
    (answers as RenderData).counted.files += n;
    return `${n} files`;
  });

  // npm drops .gitignore from published tarballs, so the template ships it as _gitignore.
  plop.setActionType("gitignore", (answers) => {
    const dir = opts(answers).targetDir;
    const from = path.join(dir, "_gitignore");
    const to = path.join(dir, ".gitignore");
    if (fs.existsSync(from)) fs.renameSync(from, to);
    const text = fs.existsSync(to) ? fs.readFileSync(to, "utf8") : "";
    fs.writeFileSync(to, ensureIgnored(text, MUST_IGNORE));
    return to;
  });

  plop.setActionType("writeEnv", (answers) => {
    (answers as RenderData).counted.files += 1;
    return writeEnvFiles(opts(answers));
  });

  // With auth, AUTH_REQUIRED defaults to true in the committed entry point (fail closed without .env).
  plop.setActionType("authDefaults", (answers) => {
    const o = opts(answers);
    const file = path.join(o.targetDir, "src/main.ts");
    if (o.choices.auth === "none" || !fs.existsSync(file)) return "no auth: src/main.ts unchanged";
    const before = fs.readFileSync(file, "utf8");
    const after = requireAuthInMain(before);
    // A template whose entry point has no run([...]) call keeps AUTH_REQUIRED=true in .env.example only.
    if (after === before) return "src/main.ts has no run([...]) call: unchanged";
    fs.writeFileSync(file, after);
    return file;
  });

  // The admin port and auth choices reach the Dockerfile's EXPOSE and the Kubernetes manifests.
  plop.setActionType("deployChoices", (answers) => {
    const o = opts(answers);
    const changed = shapeDeployFiles(o.targetDir, o.choices);
    return changed.length > 0 ? changed.join(", ") : "deploy files unchanged";
  });

  plop.setActionType("record", (answers) => {
    const o = opts(answers);
    const file = path.join(o.targetDir, RECORD_FILE);
    fs.writeFileSync(file, stringifyRecord(recordFor(o.version as string, o.names.name, o.choices)));
    (answers as RenderData).counted.files += 1;
    return file;
  });
  plop.setActionType("format", (answers) => formatRepo(opts(answers).targetDir));

  plop.setActionType("readmeChoices", (answers) => {
    const o = opts(answers);
    const file = path.join(o.targetDir, "README.md");
    fs.writeFileSync(file, replaceChoicesBlock(fs.readFileSync(file, "utf8"), o.choices));
    return file;
  });
}

export async function render(o: RenderOptions): Promise<RenderResult> {
  const plop = await nodePlop(undefined, { destBasePath: o.targetDir, force: true });
  registerActions(plop);
  const missing = (file: string) => () =>
    fs.existsSync(path.join(o.targetDir, file)) ? undefined : `no ${file} in the template`;
  plop.setGenerator("service", {
    description: "a gRPC service repository",
    prompts: [],
    actions: [
      { type: "copyTemplate" },
      { type: "gitignore" },
      { type: "writeEnv" },
      { type: "authDefaults" },
      { type: "deployChoices" },
      { type: "readmeChoices", skip: missing("README.md") },
      { type: "record", skip: () => (o.version === undefined ? "no version to record" : undefined) },
      { type: "format" },
    ],
  });
  const data: RenderData = { render: o, counted: { files: 0 } };
  const { failures } = await plop.getGenerator("service").runActions(data);
  const first = failures.find((f) => f.error !== "Aborted due to previous action failure") ?? failures[0];
  if (first) throw new Error(`writing ${o.targetDir} failed in step ${first.type}: ${first.error}`);
  return { files: data.counted.files };
}
