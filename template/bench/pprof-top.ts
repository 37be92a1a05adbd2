// Reads a CPU profile from /debug/pprof/profile (gzipped pprof) and prints where the time went:
// the top functions by self time, and time by package or source folder including callees.
// Idle time is left out of the percentages, which are of the busy samples.
//
//   node --import tsx bench/pprof-top.ts cpu.pb.gz [top=25]
//
// Frames of an esbuild bundle (dist/*.js, or another build folder such as dist-bench/ or dist-a/) are resolved
// through its source map to the file they came from (a package, or src/…), so the bundle's frames group like the
// unbundled service's.
import { existsSync, readFileSync } from "node:fs";
import { SourceMap } from "node:module";
import { fileURLToPath } from "node:url";
import { gunzipSync } from "node:zlib";
import { Profile } from "pprof-format";

export interface Summary {
  busy: number;
  idle: number;
  self: [name: string, share: number][];
  /** Self time by the package, node: module or project file of the function. */
  selfByGroup: [group: string, share: number][];
  inclusive: [group: string, share: number][];
}

/** "fn file:line" with node_modules/ and the project's path cut off. */
function label(name: string, file: string, line: number): string {
  const short = file.replace(/^.*node_modules\//, "").replace(/^file:\/\/.*?\/(src|dist[\w-]*|bench)\//, "$1/");
  return short ? `${name} ${short}:${line}` : name;
}

/** The package (node_modules), node: module, or project folder a frame belongs to. */
function group(name: string, file: string): string {
  if (!file) return name;
  const pkg = /node_modules\/((?:@[^/]+\/)?[^/]+)/.exec(file);
  if (pkg) return pkg[1]!;
  if (file.startsWith("node:")) return file;
  const own = /\/((?:src|dist[\w-]*|bench)\/.*)\/[^/]+$/.exec(file);
  return own ? `${own[1]}/` : file;
}

/** Like group, but a project frame names its file. */
function fileGroup(name: string, file: string): string {
  const own = /\/((?:src|dist[\w-]*|bench)\/.*)$/.exec(file);
  return own && !file.includes("node_modules/") ? own[1]! : group(name, file);
}

const sourceMaps = new Map<string, SourceMap | undefined>();

/** A bundle frame's original file and line (the map's sources are relative to its build folder), else the frame as it is. */
function original(file: string, line: number): [file: string, line: number] {
  if (!/\/dist[\w-]*\/[^/]+\.js$/.test(file)) return [file, line];
  if (!sourceMaps.has(file)) {
    const map = `${file.startsWith("file:") ? fileURLToPath(file) : file}.map`;
    sourceMaps.set(file, existsSync(map) ? new SourceMap(JSON.parse(readFileSync(map, "utf8"))) : undefined);
  }
  const entry = sourceMaps.get(file)?.findEntry(line - 1, 0);
  if (!entry || !("originalSource" in entry)) return [file, line];
  return [`/${entry.originalSource.replace(/^(\.\.\/)+/, "")}`, entry.originalLine + 1];
}

export function summarise(gzipped: Uint8Array, top = 25): Summary {
  const p = Profile.decode(gunzipSync(gzipped));
  const str = (i: number | bigint) => p.stringTable.strings[Number(i)] ?? "";
  const fns = new Map(p.function.map((f) => [Number(f.id), f]));
  const frames = new Map(
    p.location.map((l) => {
      const line = l.line[0];
      const f = line ? fns.get(Number(line.functionId)) : undefined;
      const name = f ? str(f.name) : "?";
      const [file, lineNo] = original(f ? str(f.filename) : "", Number(line?.line ?? 0));
      return [
        Number(l.id),
        {
          self: label(name, file, lineNo),
          group: group(name, file),
          file: fileGroup(name, file),
          idle: name === "(idle)",
        },
      ];
    }),
  );
  const self = new Map<string, number>();
  const selfByGroup = new Map<string, number>();
  const inclusive = new Map<string, number>();
  let busy = 0;
  let idle = 0;
  for (const s of p.sample) {
    const n = Number(s.value[0] ?? 0);
    const leaf = frames.get(Number(s.locationId[0]));
    if (!leaf) continue;
    if (leaf.idle) {
      idle += n;
      continue;
    }
    busy += n;
    self.set(leaf.self, (self.get(leaf.self) ?? 0) + n);
    selfByGroup.set(leaf.file, (selfByGroup.get(leaf.file) ?? 0) + n);
    const seen = new Set<string>();
    for (const id of s.locationId) {
      const g = frames.get(Number(id))?.group;
      if (g === undefined || seen.has(g)) continue;
      seen.add(g);
      inclusive.set(g, (inclusive.get(g) ?? 0) + n);
    }
  }
  const rank = (m: Map<string, number>) =>
    [...m]
      .sort((a, b) => b[1] - a[1])
      .slice(0, top)
      .map(([k, v]) => [k, v / busy] as [string, number]);
  return { busy, idle, self: rank(self), selfByGroup: rank(selfByGroup), inclusive: rank(inclusive) };
}

export function format(s: Summary): string {
  const pct = (x: number) => `${(x * 100).toFixed(1).padStart(5)}%`;
  return [
    `${s.busy} busy samples, ${s.idle} idle (${pct(s.idle / (s.busy + s.idle)).trim()} idle)`,
    "top self time (% of busy samples):",
    ...s.self.map(([k, v]) => `  ${pct(v)}  ${k}`),
    "self time by package, node: module or project file:",
    ...s.selfByGroup.map(([k, v]) => `  ${pct(v)}  ${k}`),
    "time including callees, by package or folder:",
    ...s.inclusive.map(([k, v]) => `  ${pct(v)}  ${k}`),
  ].join("\n");
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const [file, top] = process.argv.slice(2);
  if (!file) throw new Error("usage: pprof-top.ts cpu.pb.gz [top]");
  process.stdout.write(`${format(summarise(readFileSync(file), Number(top ?? 25)))}\n`);
}
