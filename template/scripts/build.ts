// Bundles src/main.ts into dist/main.js with esbuild (`npm run build`, after tsc has type-checked).
// One ES module instead of hundreds of files to resolve and translate halves the start-up time and
// trims the idle memory (BENCHMARKS.md, "Start-up and idle memory").
//
//   node --import tsx scripts/build.ts [outdir=dist]
import { rmSync } from "node:fs";
import { readFile } from "node:fs/promises";
import path from "node:path";
import { build, type Plugin } from "esbuild";

const ROOT = path.resolve(import.meta.dirname, "..");
const outdir = path.resolve(ROOT, process.argv[2] ?? "dist");

// Kept as separate modules, loaded from node_modules/ at run time:
const external = [
  // The OpenTelemetry SDK is imported only when OTLP is configured; as a bundled chunk, a CommonJS
  // package would lose its named exports. The SDK and the service must share one @opentelemetry/api:
  // a second copy would keep the tracer the service took at start-up a no-op.
  "@opentelemetry/*",
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

// Chunk names carry a content hash: start empty so no stale chunk is left beside the new ones.
rmSync(outdir, { recursive: true, force: true });
await build({
  entryPoints: [path.join(ROOT, "src/main.ts")],
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
  banner: {
    js: 'import { createRequire as __createRequire } from "node:module";\nconst require = __createRequire(import.meta.url);\nconst __distDir = import.meta.dirname;',
  },
  // Not minified: stack traces in logs and error reports stay readable without source maps. The maps are
  // written for debuggers and for `node --enable-source-maps` (which costs start-up time and memory).
  sourcemap: true,
  sourcesContent: false,
  plugins: [originalPaths],
  logLevel: "warning",
});
