// The framework's own development tooling (benchmarks against other servers, instruction counts, ablation,
// profiling scripts) lives in template/ so the framework is developed in place, but a generated repo leaves it
// out: template/framework-dev.json lists it, and both generation and `update` read that one list (update renders
// the new template through render(), so the tooling it drops shows up as removed files, deleted where the team
// never changed them). An older template has no list and renders whole, as that version generated it.
import fs from "node:fs";
import path from "node:path";

export const MANIFEST_FILE = "framework-dev.json";

export interface FrameworkDevManifest {
  /** Template paths left out: a path ending in `/` is a directory, anything else one file. */
  paths: string[];
  /** devDependencies (and the lockfile entries only they need) left out of package.json. */
  devDependencies: string[];
  /** package.json scripts left out. */
  scripts: string[];
}

const EMPTY: FrameworkDevManifest = { paths: [], devDependencies: [], scripts: [] };

function strings(v: unknown, what: string): string[] {
  if (v === undefined) return [];
  if (!Array.isArray(v) || v.some((x) => typeof x !== "string")) throw new Error(`${MANIFEST_FILE}: ${what} must be a list of strings`);
  return v as string[];
}

/** The template's manifest; a template without one (an older version) leaves nothing out. */
export function readManifest(templateDir: string): FrameworkDevManifest {
  const file = path.join(templateDir, MANIFEST_FILE);
  if (!fs.existsSync(file)) return EMPTY;
  const raw = JSON.parse(fs.readFileSync(file, "utf8")) as Record<string, unknown>;
  return {
    paths: [MANIFEST_FILE, ...strings(raw.paths, "paths")],
    devDependencies: strings(raw.devDependencies, "devDependencies"),
    scripts: strings(raw.scripts, "scripts"),
  };
}

/** Whether a template path (forward slashes; a directory without its trailing slash) is left out. */
export function isFrameworkDev(rel: string, m: FrameworkDevManifest, isDir = false): boolean {
  return m.paths.some((p) => (p.endsWith("/") ? rel === p.slice(0, -1) || rel.startsWith(p) : !isDir && rel === p));
}

const stringify = (v: unknown) => `${JSON.stringify(v, null, 2)}\n`;

/** package.json without the manifest's devDependencies and scripts (unchanged text when none applies). */
export function prunePackageJson(text: string, m: FrameworkDevManifest): string {
  if (m.devDependencies.length === 0 && m.scripts.length === 0) return text;
  const pkg = JSON.parse(text) as Record<string, Record<string, unknown> | unknown>;
  for (const [key, names] of [
    ["devDependencies", m.devDependencies],
    ["scripts", m.scripts],
  ] as const) {
    const block = pkg[key] as Record<string, unknown> | undefined;
    if (block && typeof block === "object") for (const name of names) delete block[name];
  }
  return stringify(pkg);
}

interface LockEntry {
  dependencies?: Record<string, string>;
  optionalDependencies?: Record<string, string>;
  peerDependencies?: Record<string, string>;
  devDependencies?: Record<string, string>;
  link?: boolean;
  resolved?: string;
}

/**
 * package-lock.json (v2/v3) without the manifest's devDependencies and every package only they needed, so that
 * `npm install` in the generated repo installs the smaller tree and leaves the lockfile as it is. Reachability
 * follows Node's resolution: a dependency of `node_modules/a` is found in `node_modules/a/node_modules/` first,
 * then in each parent's.
 */
export function pruneLockfile(text: string, m: FrameworkDevManifest): string {
  if (m.devDependencies.length === 0) return text;
  const lock = JSON.parse(text) as { packages?: Record<string, LockEntry> };
  const packages = lock.packages;
  const root = packages?.[""];
  if (!packages || !root) return text;
  for (const name of m.devDependencies) delete root.devDependencies?.[name];

  const resolve = (from: string, name: string): string | undefined => {
    for (let dir = from; ; ) {
      const candidate = dir === "" ? `node_modules/${name}` : `${dir}/node_modules/${name}`;
      if (packages[candidate]) return candidate;
      if (dir === "") return undefined;
      const i = dir.lastIndexOf("/node_modules/");
      dir = i < 0 ? "" : dir.slice(0, i);
    }
  };
  const reached = new Set<string>([""]);
  const queue = [""];
  while (queue.length > 0) {
    const at = queue.pop() as string;
    const entry = packages[at] as LockEntry;
    const deps = {
      ...entry.dependencies,
      ...entry.optionalDependencies,
      ...entry.peerDependencies,
      ...(at === "" ? entry.devDependencies : {}),
    };
    for (const name of Object.keys(deps)) {
      const found = resolve(at, name);
      if (found === undefined || reached.has(found)) continue;
      reached.add(found);
      queue.push(found);
      // A workspace or `file:` link: its target is a package of its own.
      const target = packages[found]?.link ? packages[found]?.resolved : undefined;
      if (target !== undefined && packages[target] && !reached.has(target)) {
        reached.add(target);
        queue.push(target);
      }
    }
  }
  for (const key of Object.keys(packages)) if (!reached.has(key)) delete packages[key];
  return stringify(lock);
}
