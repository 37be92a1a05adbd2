// dist/main.js, the file `node dist/main.js` runs (scripts/build.ts bundles it from this one): it maps stack
// traces to src/, then compiles and runs the bundled service (dist/service.js) with V8's code cache.
import type { SourceMap } from "node:module";

// Node's modules by getBuiltinModule, not `import`: importing one into an ES module builds a facade that reads
// every export, and node:fs's `promises` getter alone loads ~30 more of Node's modules (readline, the REPL's
// history…) that the service never needs.
const { readFileSync, renameSync, rmSync, writeFileSync } = process.getBuiltinModule("node:fs");
const module = process.getBuiltinModule("node:module");
const path = process.getBuiltinModule("node:path");
const { fileURLToPath } = process.getBuiltinModule("node:url");
const vm = process.getBuiltinModule("node:vm");
const { crc32 } = process.getBuiltinModule("node:zlib");

const bundle = new URL("service.js", import.meta.url);
if (process.env.SOURCE_MAPS !== "false") mapStackTraces(new URL(".", import.meta.url).href);
await runBundle(bundle, new URL("service.cache", import.meta.url));

/**
 * Compiles the bundle with the code cache in `cacheFile` and runs it; resolves once the service is ready.
 *
 * A script's code cache, unlike the one Node's compile cache keeps for a module, can be made after the code
 * has run, so it also holds the functions V8 compiles lazily on the way to ready: ~17 % of the work of a
 * start. The build writes it (scripts/build.ts starts the service once), so the first start of a container
 * reads it too. The file starts with the CRC-32 of the bundle it was made from: V8 itself checks only the
 * source's length, and a cache of another bundle of the same length would run that bundle's code. V8 rejects
 * a cache of another V8 or other V8 flags. Without a usable cache the bundle is compiled from source, and the
 * cache is written once the service is ready, where dist/ is writable (a new file renamed into place, so a
 * concurrent start reads the old file or the new one, never a part).
 */
async function runBundle(file: URL, cacheFile: URL): Promise<void> {
  // Read as a string: no copy of the 5 MB in a Buffer (the build keeps the bundle ASCII, one byte a character).
  const source = readFileSync(file, "latin1");
  const sum = crc32(source);
  const script = compile(source, file.href, readCache(cacheFile, sum));
  const main = script.runInThisContext() as (require: NodeJS.Require, url: string, dir: string) => Promise<void>;
  await main(module.createRequire(file), file.href, path.dirname(fileURLToPath(file)));
  if (script.cachedDataRejected === false) return; // there was a cache, and V8 took it
  try {
    const header = Buffer.alloc(4);
    header.writeUInt32LE(sum);
    const tmp = `${fileURLToPath(cacheFile)}.${process.pid}.tmp`;
    writeFileSync(tmp, Buffer.concat([header, script.createCachedData()]), { mode: 0o644 });
    try {
      renameSync(tmp, cacheFile);
    } catch {
      rmSync(tmp, { force: true });
    }
  } catch {
    // dist/ is read-only here (an image run as another user): the next start compiles from source again
  }
}

/** The cache, when there is one and it was made from the bundle whose CRC-32 is `sum`. */
function readCache(cacheFile: URL, sum: number): Buffer | undefined {
  try {
    const cache = readFileSync(cacheFile);
    return cache.length > 4 && cache.readUInt32LE(0) === sum ? cache.subarray(4) : undefined;
  } catch {
    return undefined; // none (the build could not write one): compiled from source
  }
}

// Of its own so that nothing holds the cache's buffer once V8 has read it.
function compile(source: string, filename: string, cachedData: Buffer | undefined): vm.Script {
  return new vm.Script(source, { filename, cachedData, importModuleDynamically: vm.constants.USE_MAIN_CONTEXT_DEFAULT_LOADER });
}

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
