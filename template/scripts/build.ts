// Bundles src/main.ts into dist/service.js with esbuild (`npm run build`, after tsc has type-checked),
// started by a small dist/main.js that first turns on Node's compile cache. One ES module instead of
// hundreds of files to resolve and translate halves the start-up time and trims the idle memory; the
// compile cache takes most of what is left of compiling it (BENCHMARKS.md, "Start-up and idle memory").
//
//   node --import tsx scripts/build.ts [outdir=dist] [entry=src/main.ts]
//
// (Where the framework is developed, its benchmarks build their fixture service into dist-bench/ with it.)
import { spawnSync } from "node:child_process";
import { chmodSync, cpSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { readFile } from "node:fs/promises";
import { builtinModules, createRequire } from "node:module";
import os from "node:os";
import path from "node:path";
import { pathToFileURL } from "node:url";
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

const REQUIRE_BANNER = 'import { createRequire as __createRequire } from "node:module";\nconst require = __createRequire(import.meta.url);';

// Chunk names carry a content hash: start empty so no stale chunk is left beside the new ones.
rmSync(outdir, { recursive: true, force: true });
/**
 * A package imported with `import()` becomes a chunk of its own; when it is CommonJS (the OpenTelemetry
 * SDK), esbuild's chunk exports only `default`. This facade gives the chunk the named exports Node's own
 * import would (the package's exports, read by requiring it here). Bundling the SDK rather than leaving it
 * external keeps one @opentelemetry/api for it and the service: with two, the tracer the service takes at
 * start-up would stay a no-op.
 */
const namedExportsOfDynamicCommonJs: Plugin = {
  name: "named-exports-of-dynamic-commonjs",
  setup(b) {
    b.onResolve({ filter: /^[^./]/ }, async (args) => {
      if (args.kind !== "dynamic-import" || args.pluginData === "facade") return undefined;
      const resolved = await b.resolve(args.path, { kind: args.kind, resolveDir: args.resolveDir, pluginData: "facade" });
      if (resolved.external || resolved.errors.length > 0) return resolved;
      const req = createRequire(path.join(args.resolveDir, "index.js"));
      let file: string;
      let exports: unknown;
      try {
        file = req.resolve(args.path);
        // The same file for import and require: CommonJS (on Node 20, require() of an ES module throws).
        if (file !== resolved.path) return resolved;
        exports = req(file);
      } catch {
        return resolved;
      }
      if (typeof exports !== "object" || exports === null) return resolved;
      const names = Object.keys(exports).filter((n) => n !== "default" && n !== "__esModule");
      return { path: file, namespace: "cjs-facade", pluginData: names };
    });
    b.onLoad({ filter: /.*/, namespace: "cjs-facade" }, (args) => {
      const names = args.pluginData as string[];
      const values = names.map((n, i) => `const v${i} = m[${JSON.stringify(n)}];`).join("\n");
      const list = names.map((n, i) => `v${i} as ${JSON.stringify(n)}`).join(", ");
      return {
        // require(), as Node's import does: default is module.exports, whatever `__esModule` says.
        contents: `const m = require(${JSON.stringify(args.path)});\n${values}\nexport default m;\nexport { ${list} };\n`,
        resolveDir: path.dirname(args.path),
        loader: "js",
      };
    });
  },
};

await build({
  entryPoints: [{ in: entry, out: "service" }],
  outdir,
  bundle: true,
  platform: "node",
  format: "esm",
  target: "node20",
  // The service's own dynamic imports (the Sentry client, when SENTRY_DSN is set) become chunks loaded on
  // first use.
  splitting: true,
  external,
  // Bundled CommonJS packages call require() for Node's built-in modules and for the externals.
  banner: { js: `${REQUIRE_BANNER}\nconst __distDir = import.meta.dirname;` },
  // Not minified: stack traces stay readable even without source maps. dist/main.js maps them, so traces
  // point into src/ (SOURCE_MAPS=false turns that off).
  sourcemap: true,
  sourcesContent: false,
  plugins: [builtinsByRequire, bundlePatches, originalPaths, namedExportsOfDynamicCommonJs],
  logLevel: "warning",
});
// dist/main.js, what `node dist/main.js` runs: the compile cache and stack-trace mapping, then the bundle.
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
  // oxlint-disable-next-line no-control-regex -- the range is every non-ASCII character
  return text.replace(/[^\x00-\x7f]/gu, (c) => `\\u{${c.codePointAt(0)!.toString(16)}}`);
}

/**
 * Each bundled CommonJS module is a method of an object literal (`__commonJS({ "path"(exports, module) {…} })`),
 * which V8 compiles only when it is first called, and every one is called at start-up. Node's compile cache
 * holds what V8 compiled with the file, before it ran, so all of them were compiled again from source at
 * every start. Written as a parenthesized function (`"path": (function(exports, module) {…})`), the form V8
 * compiles at once, they are in the cache: 8 % fewer instructions to ready (BENCHMARKS.md, session 4). Their
 * inner functions stay lazy. esbuild prints the wrapper's first line and its `  }\n});` end the same way
 * every time; the build fails if a wrapper does not have that shape.
 */
async function eagerCommonJs(text: string, file: string): Promise<string> {
  const open = /^(var [\w$]+ = __commonJS\(\{\n {2})("(?:[^"\\\n]|\\.)*")\(([\w, ]*)\) \{\n/gm;
  let out = "";
  let at = 0;
  for (let m = open.exec(text); m; m = open.exec(text)) {
    const end = text.indexOf("\n  }\n});\n", open.lastIndex);
    const next = text.indexOf("= __commonJS({", open.lastIndex);
    if (end === -1 || (next !== -1 && next < end)) throw new Error(`${file}: a __commonJS wrapper of unexpected shape at ${m.index}`);
    out += `${text.slice(at, m.index)}${m[1]}${m[2]}: (function(${m[3]}) {\n${text.slice(open.lastIndex, end)}\n  })\n});\n`;
    at = end + "\n  }\n});\n".length;
    open.lastIndex = at;
  }
  out += text.slice(at);
  const wrappers = text.split("= __commonJS({").length - 1;
  const converted = out.split(": (function(").length - text.split(": (function(").length;
  if (converted !== wrappers) throw new Error(`${file}: ${converted} of ${wrappers} __commonJS wrappers rewritten`);
  await transform(out, { loader: "js", format: "esm" }); // still parses
  return out;
}

for (const name of readdirSync(outdir)) {
  if (!name.endsWith(".js") || name === "main.js") continue;
  const file = path.join(outdir, name);
  const text = readFileSync(file, "utf8");
  const done = await eagerCommonJs(asciiOnly(text), name);
  if (done !== text) writeFileSync(file, done);
}

/**
 * Fills dist/.compile-cache, which dist/main.js hands to Node's compile cache: V8's code for the bundle, made
 * now so that the image carries it and the first start of every container is as quick as a restart (a cold
 * cache costs ~35 % more instructions to ready, BENCHMARKS.md, session 4). Importing a name the bundle does
 * not export makes Node load and compile its files, then stop before running any of them. Node keys the
 * cache by the file's absolute path, its content and Node's version and flags: a checkout moved elsewhere
 * or another Node just compiles as without it. Readable by every user: the image runs as another one.
 */
function fillCompileCache(): void {
  const cache = path.join(outdir, ".compile-cache");
  const tmp = mkdtempSync(path.join(os.tmpdir(), "compile-cache-"));
  try {
    const importer = path.join(tmp, "compile-only.mjs");
    writeFileSync(
      importer,
      `import { "compile only" as none } from ${JSON.stringify(pathToFileURL(path.join(outdir, "service.js")).href)};\n`,
    );
    const runner = [
      'import module from "node:module";',
      "module.enableCompileCache(process.argv[1]);",
      "await import(process.argv[2]).then(() => process.exit(2), () => {});",
      "module.flushCompileCache();",
    ].join("\n");
    const env = { ...process.env };
    delete env.NODE_OPTIONS; // the service's own flags, not the build's
    const r = spawnSync(process.execPath, ["--input-type=module", "-e", runner, cache, pathToFileURL(importer).href], {
      env,
      stdio: "inherit",
    });
    if (r.status !== 0) throw new Error(`filling ${cache} failed (${r.status ?? r.signal})`);
  } finally {
    rmSync(tmp, { recursive: true, force: true });
  }
  forOtherUsers(cache);
  for (const entry of readdirSync(cache, { recursive: true, withFileTypes: true })) {
    chmodSync(path.join(entry.parentPath, entry.name), entry.isDirectory() ? 0o755 : 0o644);
  }
}

/**
 * Node keeps one cache directory per user id (`v24.21.0-x64-<V8 tag>-<uid>`), and the image runs as another
 * user (Dockerfile: USER 1000) than the build (root): without a directory of its own every container start
 * compiled the bundle from source, and could not write a cache into the root-owned dist/ either. The entries
 * hold no user id, so the build's directory is copied under the name of each user in COMPILE_CACHE_UIDS.
 */
function forOtherUsers(cache: string): void {
  const uids = (process.env.COMPILE_CACHE_UIDS ?? "").split(",").filter((uid) => uid.trim() !== "");
  const own = readdirSync(cache).find((name) => name.endsWith(`-${process.getuid?.() ?? 0}`));
  if (uids.length === 0 || own === undefined) return;
  for (const uid of uids) {
    if (!/^\d+$/.test(uid.trim())) throw new Error(`COMPILE_CACHE_UIDS: "${uid}" is not a numeric user id`);
    const theirs = own.replace(/-\d+$/, `-${uid.trim()}`);
    if (theirs !== own) cpSync(path.join(cache, own), path.join(cache, theirs), { recursive: true });
  }
}
fillCompileCache();
