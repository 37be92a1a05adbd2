// dist/main.js, the file `node dist/main.js` runs (scripts/build.ts bundles it from this one): it turns on
// Node's compile cache and maps stack traces to src/, then loads the bundled service. It has to run before
// the bundle is loaded, hence a file of its own.
import { readFileSync } from "node:fs";
import module, { type SourceMap } from "node:module";
import { fileURLToPath } from "node:url";

// Node's compile cache (Node 22.1+) keeps V8's code of the bundle on disk, so a start skips compiling its 4 MB
// (~27 % of the work to ready). scripts/build.ts fills dist/.compile-cache, so the first start of a new
// container reads it too; NODE_COMPILE_CACHE names another directory. Where it cannot be read or written the
// service starts as it would without it. Older Node: no cache.
module.enableCompileCache?.(process.env.NODE_COMPILE_CACHE || fileURLToPath(new URL(".compile-cache", import.meta.url)));
if (process.env.SOURCE_MAPS !== "false") mapStackTraces(new URL(".", import.meta.url).href);
await import("./service.js"); // resolves once the service is ready
// The cache is written now rather than only at exit: a process that never exits cleanly (killed at the end of
// its grace period, out of memory) would leave none, and every start would compile the bundle from source.
module.flushCompileCache?.();

/**
 * Stack traces in logs and error reports name src/ files and lines, not the bundle's. Node's own support
 * (process.setSourceMapsEnabled) reads and indexes every file's map as the file loads: ~30 ms of CPU and
 * ~10 MB of resident memory at start-up, for traces most processes never format (BENCHMARKS.md, session 4).
 * Here a map is read the first time a trace passes through its file, and frames are written as Node's
 * support writes them (its serializeJSStackFrame), from the public module.SourceMap.
 */
function mapStackTraces(dir: string): void {
  const maps = new Map<string, SourceMap | undefined>();
  const mapOf = (file: string | undefined): SourceMap | undefined => {
    if (!file?.startsWith(dir) || !file.endsWith(".js")) return undefined;
    if (!maps.has(file)) maps.set(file, readMap(`${file}.map`));
    return maps.get(file);
  };
  // Node's own: the header it writes ("RangeError [ERR_OUT_OF_RANGE]: …") when given no frames.
  const header = Error.prepareStackTrace ?? ((error: Error) => String(error));
  Error.prepareStackTrace = (error, trace) => {
    let stack = header(error, []);
    for (let i = 0; i < trace.length; i++) stack += `\n    at ${frame(trace[i]!, trace[i + 1], mapOf)}`;
    return stack;
  };
}

function readMap(url: string): SourceMap | undefined {
  try {
    const payload = JSON.parse(readFileSync(new URL(url), "utf8")) as { sources: string[]; sourceRoot?: string };
    payload.sources = payload.sources.map((source) => new URL((payload.sourceRoot ?? "") + source, url).href);
    return new module.SourceMap(payload as ConstructorParameters<typeof module.SourceMap>[0]);
  } catch {
    return undefined; // no map (deleted, unreadable): the bundle's own positions
  }
}

type MapOf = (file: string | undefined) => SourceMap | undefined;

function frame(site: NodeJS.CallSite, caller: NodeJS.CallSite | undefined, mapOf: MapOf): string {
  try {
    return mappedFrame(site, caller, mapOf);
  } catch {
    return String(site);
  }
}

function mappedFrame(site: NodeJS.CallSite, caller: NodeJS.CallSite | undefined, mapOf: MapOf): string {
  const file = site.getFileName() ?? site.getEvalOrigin();
  const map = mapOf(file);
  const line = site.getLineNumber();
  const column = site.getColumnNumber();
  if (!map || line === null || column === null) return String(site);
  const entry = map.findEntry(line - 1, column - 1);
  if (!("originalSource" in entry)) return String(site);
  // The name the transpiler may have changed: the enclosing function's in the map, else the caller's call.
  const enclosing = map.findEntry((site.getEnclosingLineNumber() ?? 0) - 1, (site.getEnclosingColumnNumber() ?? 0) - 1);
  let name = "name" in enclosing ? enclosing.name : undefined;
  if (!name && caller && caller.getFileName() === file) {
    const call = map.findEntry((caller.getLineNumber() ?? 0) - 1, (caller.getColumnNumber() ?? 0) - 1);
    name = "name" in call ? call.name : undefined;
  }
  const prefix = site.isAsync() ? "async " : site.isConstructor() ? "new " : "";
  const type = site.getTypeName();
  const fn = name || (site.getFunctionName() ?? site.getMethodName()) || "<anonymous>";
  const source = entry.originalSource.startsWith("file://") ? fileURLToPath(entry.originalSource) : entry.originalSource;
  return `${prefix}${type !== null && type !== "global" ? `${type}.` : ""}${fn} (${source}:${entry.originalLine + 1}:${entry.originalColumn + 1})`;
}
