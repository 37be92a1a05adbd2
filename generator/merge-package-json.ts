// package.json merged key by key: a line-based merge of JSON either conflicts on neighbouring dependency
// lines or, worse, merges cleanly into invalid JSON. Each dependency, script and top-level field is one
// key: the template's change is taken where the repo left the key as it was; both changed it differently →
// the repo's value stays and the key is reported as a conflict (no markers: the file stays valid JSON).
import { isDeepStrictEqual } from "node:util";

type Json = Record<string, unknown>;

/** Top-level fields whose entries are merged one by one. */
const KEYED = new Set([
  "dependencies",
  "devDependencies",
  "optionalDependencies",
  "peerDependencies",
  "scripts",
  "engines",
  "overrides",
  "imports",
  "exports",
]);

export interface KeyConflict {
  /** e.g. `dependencies.fastify` or `type`. */
  key: string;
  ours: unknown;
  base: unknown;
  theirs: unknown;
}

export interface PackageJsonMerge {
  text: string;
  /** Keys whose value changed in the result (taken from the template). */
  changed: string[];
  conflicts: KeyConflict[];
}

const same = (a: unknown, b: unknown) => isDeepStrictEqual(a, b);
const isMap = (v: unknown): v is Json => typeof v === "object" && v !== null && !Array.isArray(v);

/** One key's three-way decision; `undefined` means absent (deleted or never there). */
function decide(ours: unknown, base: unknown, theirs: unknown): { value: unknown; conflict: boolean } {
  if (same(base, theirs) || same(ours, theirs)) return { value: ours, conflict: false };
  if (same(base, ours)) return { value: theirs, conflict: false };
  return { value: ours, conflict: true };
}

/** Merges keys in ours' order; keys only the template added follow, in the template's order. */
function mergeMap(ours: Json, base: Json, theirs: Json, prefix: string, out: PackageJsonMerge, nested: boolean): Json {
  const result: Json = {};
  const keys = [...new Set([...Object.keys(ours), ...Object.keys(theirs), ...Object.keys(base)])];
  for (const key of keys) {
    const [o, b, t] = [ours[key], base[key], theirs[key]];
    const name = prefix ? `${prefix}.${key}` : key;
    if (nested && KEYED.has(key) && isMap(o ?? {}) && isMap(b ?? {}) && isMap(t ?? {}) && !(o === undefined && b !== undefined)) {
      // The repo deleted the whole section although the template had it: that is the repo's (whole-key) choice.
      const merged = mergeMap((o ?? {}) as Json, (b ?? {}) as Json, (t ?? {}) as Json, name, out, false);
      if (o !== undefined || Object.keys(merged).length > 0) result[key] = sortedLike(merged, o as Json | undefined, t as Json | undefined);
      continue;
    }
    const d = decide(o, b, t);
    if (d.conflict) out.conflicts.push({ key: name, ours: o, base: b, theirs: t });
    else if (!same(d.value, o)) out.changed.push(name);
    if (d.value !== undefined) result[key] = d.value;
  }
  return result;
}

/** npm keeps dependency maps sorted; so does the result when the repo's (or the template's) map was sorted. */
function sortedLike(merged: Json, ours: Json | undefined, theirs: Json | undefined): Json {
  const isSorted = (m: Json | undefined) => {
    const k = Object.keys(m ?? {});
    return k.every((key, i) => i === 0 || (k[i - 1] as string).localeCompare(key, "en") <= 0);
  };
  if (!isSorted(ours ?? theirs)) return merged;
  return Object.fromEntries(Object.entries(merged).sort(([a], [b]) => a.localeCompare(b, "en")));
}

/** Throws SyntaxError (with the file's role in the message) when one of the three is not a JSON object. */
export function mergePackageJson(ours: string, base: string, theirs: string): PackageJsonMerge {
  const parse = (text: string, role: string): Json => {
    let v: unknown;
    try {
      v = JSON.parse(text);
    } catch (e) {
      throw new SyntaxError(`${role} package.json is not valid JSON (${(e as Error).message.split("\n")[0]})`);
    }
    if (!isMap(v)) throw new SyntaxError(`${role} package.json is not a JSON object`);
    return v;
  };
  const out: PackageJsonMerge = { text: ours, changed: [], conflicts: [] };
  const merged = mergeMap(parse(ours, "your"), parse(base, "the old template's"), parse(theirs, "the new template's"), "", out, true);
  if (out.changed.length > 0) out.text = `${JSON.stringify(merged, null, indentOf(ours))}\n`;
  return out;
}

function indentOf(text: string): string | number {
  const m = /^\{\r?\n([ \t]+)"/.exec(text);
  return m?.[1] ?? 2;
}
