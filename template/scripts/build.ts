// Bundles src/main.ts into dist/service.js with esbuild (`npm run build`, after tsc has type-checked),
// started by a small dist/main.js that runs it with V8's code cache (dist/service.cache, written here after
// one start). One file instead of hundreds to resolve and translate halves the start-up time and trims the
// idle memory; the code cache takes most of what is left of compiling it (BENCHMARKS.md, "Start-up and
// idle memory", "Session 6: start-up").
//
//   node --import tsx scripts/build.ts [outdir=dist] [entry=src/main.ts]
//
// (bench/build.ts builds the framework's fixture service into dist-bench/ with it, for the benchmarks.)
import { spawn } from "node:child_process";
import { chmodSync, existsSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { readFile } from "node:fs/promises";
import { builtinModules } from "node:module";
import path from "node:path";
import { build, type Plugin, transform } from "esbuild";
import { bundlePatches } from "./bundle-patches.js";

const ROOT = path.resolve(import.meta.dirname, "..");
const outdir = path.resolve(ROOT, process.argv[2] ?? "dist");
const entry = path.resolve(ROOT, process.argv[3] ?? "src/main.ts");

// Kept as separate modules, loaded from node_modules/ at run time:
const external = [
  // required by grpc-js only for channelz and ORCA, with protobufjs behind it: ~370 KB never parsed
  "@grpc/proto-loader",
  // found at run time with createRequire, never imported: listed so a future import keeps them on disk
  "pino-pretty", // a dev dependency, used when present
  "swagger-ui-dist", // its files are served from disk
];

/**
 * A bundled CommonJS file that reads `__dirname` or `__filename` (pino's and thread-stream's worker
 * files, grpc-js's channelz/ORCA protos) gets its original location under node_modules/, which the
 * image and every checkout keep beside dist/. Without it an ES module has neither variable.
 */
const originalPaths: Plugin = {
  name: "original-paths",
  setup(b) {
    b.onLoad({ filter: /[\\/]node_modules[\\/].*\.c?js$/ }, async (args) => {
      const contents = await readFile(args.path, "utf8");
      if (!/\b__(dirname|filename)\b/.test(contents)) return undefined;
      const rel = path.relative(outdir, args.path).split(path.sep).join("/");
      // No import.meta here: esbuild would take the file for an ES module. __distDir comes from the banner.
      const prelude = `var __filename = require("node:path").join(__distDir, ${JSON.stringify(rel)}), __dirname = require("node:path").dirname(__filename);\n`;
      return { contents: prelude + contents, loader: "js" };
    });
  },
};

/**
 * Node's built-in modules are loaded with require(), not `import`: importing one into an ES module builds an
 * ES facade that reads every export, getters included, and node:http's `WebSocket`, `CloseEvent` and
 * `MessageEvent` getters load Node's whole bundled undici (fetch, WebSocket) that way: ~60 ms of CPU at start-up
 * for a module the service never uses. esbuild's wrapper around require() copies the exports as getters, so
 * nothing is read before it is used.
 */
const builtinsByRequire: Plugin = {
  name: "builtins-by-require",
  setup(b) {
    const builtins = new Set(builtinModules);
    b.onResolve({ filter: /^[a-z]/ }, (args) => {
      if (args.kind !== "import-statement") return undefined;
      const name = args.path.replace(/^node:/, "");
      if (!builtins.has(name) && !args.path.startsWith("node:")) return undefined;
      return { path: args.path, namespace: "builtin" };
    });
    b.onLoad({ filter: /.*/, namespace: "builtin" }, (args) => ({
      contents: `module.exports = require(${JSON.stringify(args.path)});`,
      loader: "js",
    }));
  },
};

/**
 * The bundle is the body of one async function, which dist/main.js compiles with vm.Script: unlike an ES
 * module's, a script's code cache can be made after it has run, so it holds the functions V8 compiled lazily
 * on the way to ready too (see writeCodeCache). esbuild writes an ES module body (top-level await is
 * allowed, as in src/main.ts); with everything bundled it has no import or export statement, so it is also a
 * valid async function body. `require`, `import.meta.url` and `import.meta.dirname` become its parameters.
 */
const WRAPPER_OPEN = '(async function (require, __importMetaUrl, __distDir) { "use strict";';
const WRAPPER_CLOSE = "})";

// Start empty: no file of an earlier build (a cache of another bundle, chunks of older builds) is left behind.
rmSync(outdir, { recursive: true, force: true });
await build({
  entryPoints: [{ in: entry, out: "service" }],
  outdir,
  bundle: true,
  platform: "node",
  format: "esm",
  target: "node20",
  // The service's own dynamic imports (the Sentry client when SENTRY_DSN is set, the OpenTelemetry SDK when
  // tracing is on) stay in the one file, evaluated on first use.
  splitting: false,
  external,
  define: { "import.meta.url": "__importMetaUrl", "import.meta.dirname": "__distDir" },
  // Bundled CommonJS packages call require() for Node's built-in modules and for the externals.
  banner: { js: WRAPPER_OPEN },
  footer: { js: WRAPPER_CLOSE },
  // Not minified: stack traces stay readable even without source maps. dist/main.js maps them, so traces
  // point into src/ (SOURCE_MAPS=false turns that off).
  sourcemap: true,
  sourcesContent: false,
  plugins: [builtinsByRequire, bundlePatches, originalPaths],
  logLevel: "warning",
});
// dist/main.js, what `node dist/main.js` runs: stack-trace mapping, then the bundle with its code cache.
await build({
  entryPoints: [{ in: path.join(ROOT, "scripts/entry.ts"), out: "main" }],
  outdir,
  bundle: true,
  platform: "node",
  format: "esm",
  target: "node20",
  external: ["./service.js"],
  banner: { js: "// Generated by scripts/build.ts from scripts/entry.ts." },
  logLevel: "warning",
});

/**
 * esbuild escapes non-ASCII characters in code (charset "ascii") but keeps them in comments, and one
 * `→` in a comment makes V8 hold the whole 4 MB source as a two-byte string: 4 MB more resident memory
 * for as long as the service runs. Escaping them in the comments too keeps the source one byte a character.
 */
function asciiOnly(text: string): string {
  // biome-ignore lint/suspicious/noControlCharactersInRegex: the range is every non-ASCII character
  return text.replace(/[^\x00-\x7f]/gu, (c) => `\\u{${c.codePointAt(0)!.toString(16)}}`);
}

// The bundle as dist/main.js runs it: one byte a character, and a valid function body. An import or export
// statement esbuild had to keep (an external ES module imported statically) would not be: import it with
// `import()` or bundle it instead.
const service = path.join(outdir, "service.js");
const text = readFileSync(service, "utf8");
const ascii = asciiOnly(text);
await transform(ascii, { loader: "js" }).catch((err: Error) => {
  throw new Error(`${service} is not a valid script (an import or export statement left in the bundle?): ${err.message}`);
});
if (ascii !== text) writeFileSync(service, ascii);

/**
 * Writes dist/service.cache, V8's code for the bundle, by starting the service once: dist/main.js writes the
 * cache once the service is ready when there is none, so it holds every function compiled on the way there,
 * and the image carries it (a start without it costs ~40 % more instructions to ready, BENCHMARKS.md). The
 * start listens on free loopback ports, needs no network and no secrets, and is stopped as soon as the file
 * is there. A service that cannot start here (a setting it requires is not set) gets no cache: it starts as
 * it would without one, and writes the cache itself on its first start where dist/ is writable.
 */
async function writeCodeCache(): Promise<void> {
  const cache = path.join(outdir, "service.cache");
  // Only PATH, HOME and TMPDIR from the build's environment: no setting or secret of the machine that builds.
  // No drain before stopping: nothing routes calls to it.
  const env: NodeJS.ProcessEnv = { LISTEN_HOST: "127.0.0.1", GRPC_PORT: "0", HTTP_PORT: "0", GRPC_GRACEFUL_DURATION_IN_SECONDS: "0" };
  for (const k of ["PATH", "HOME", "TMPDIR"]) if (process.env[k] !== undefined) env[k] = process.env[k];
  const child = spawn(process.execPath, [path.join(outdir, "main.js")], { env, stdio: ["ignore", "pipe", "pipe"] });
  let output = "";
  child.stdout.on("data", (d: Buffer) => (output += d));
  child.stderr.on("data", (d: Buffer) => (output += d));
  const exited = new Promise<number | null>((resolve) => child.once("exit", (code) => resolve(code)));
  const deadline = Date.now() + 60_000;
  while (!existsSync(cache) && child.exitCode === null && child.signalCode === null && Date.now() < deadline) {
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
  child.kill("SIGTERM");
  const stopping = setTimeout(() => child.kill("SIGKILL"), 15_000);
  await exited;
  clearTimeout(stopping);
  if (existsSync(cache))
    chmodSync(cache, 0o644); // readable by every user: the image runs as another one
  else process.stderr.write(`build: no code cache written (the service did not get ready here):\n${output.slice(-2000)}\n`);
}
await writeCodeCache();
