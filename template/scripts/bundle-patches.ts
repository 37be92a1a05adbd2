// Small edits scripts/build.ts makes to dependencies' code as it bundles them, each to take work off the
// service's start-up that gives nothing back. Each one replaces an exact piece of text and the build fails
// if that text is gone (a new version of the package), so an upgrade brings it back here to be looked at
// again rather than silently dropped. Runs from source (tests, `make run`) use the packages as published:
// the edits change when work is done, never what comes out.
import { readFile } from "node:fs/promises";
import type { Plugin } from "esbuild";

interface Patch {
  /** The file, by its path under node_modules/. */
  file: RegExp;
  /** Exact text → its replacement; every occurrence is replaced, and there must be at least one. */
  edits: [find: string, replace: string][];
}

const patches: Patch[] = [
  {
    // @fastify/compress asks `payload instanceof Response` of every response, and reading the global `Response`
    // loads Node's bundled undici (fetch, WebSocket): 30–100 ms of CPU, on the first response, which is the
    // first /readycheck. Asked the way fastify's own reply asks it, by the object's tag, it needs no undici:
    // a fetch Response is tagged "Response", and none can exist before undici is loaded anyway.
    file: /[\\/]node_modules[\\/]@fastify[\\/]compress[\\/]lib[\\/]utils\.js$/,
    edits: [
      ["return obj instanceof Response", 'return Object.prototype.toString.call(obj) === "[object Response]"'],
      // readable-stream (a copy of Node's streams, 170 KB) only for decompressing request bodies: loaded then.
      ["const { Transform } = require('readable-stream')", "const transform = () => require('readable-stream').Transform"],
      ["new Transform({", "new (transform())({"],
    ],
  },
  {
    // @fastify/compress loads mime-db (a 230 KB table), minipass and readable-stream when the service starts;
    // it reads them only for a type the service's own list does not name (never: the service opts those
    // out first), an already-compressed body, or a streamed one. Loaded on that first use instead.
    file: /[\\/]node_modules[\\/]@fastify[\\/]compress[\\/]index\.js$/,
    edits: [
      ["const mimedb = require('mime-db')", "let mimedbTable; const mimedb = () => (mimedbTable ??= require('mime-db'))"],
      ["mimedb[type", "mimedb()[type"],
      ["const { Minipass } = require('minipass')", "const minipass = () => require('minipass').Minipass"],
      ["new Minipass()", "new (minipass())()"],
      ["const { Readable } = require('readable-stream')", "const readableStream = () => require('readable-stream').Readable"],
      ["Readable.from(intoAsyncIterator", "readableStream().from(intoAsyncIterator"],
    ],
  },
  {
    // fastify loads its schema compilers (ajv, fast-json-stringify: ~600 KB of code to evaluate) as it
    // creates the server, though they only compile the schemas of routes that declare one (the service's
    // routes declare none). Each is loaded when first asked to compile, and is the same compiler then.
    file: /[\\/]node_modules[\\/]fastify[\\/]lib[\\/]schema-controller\.js$/,
    edits: [
      [
        "const ValidatorSelector = require('@fastify/ajv-compiler')\n    compilersFactory.buildValidator = ValidatorSelector()",
        "let selectValidator\n    compilersFactory.buildValidator = (...args) => (selectValidator ??= require('@fastify/ajv-compiler')())(...args)",
      ],
      [
        "const SerializerSelector = require('@fastify/fast-json-stringify-compiler')\n    compilersFactory.buildSerializer = SerializerSelector()",
        "let selectSerializer\n    compilersFactory.buildSerializer = (...args) => (selectSerializer ??= require('@fastify/fast-json-stringify-compiler')())(...args)",
      ],
    ],
  },
  {
    // pino() lists its callers' files (util.getCallSites) on every call, for one use: resolving a relative
    // `transport` target. Giving a call site its line makes V8 count the lines of the 4 MB bundle: ~3 % of
    // the instructions to ready. Listed only when the options name a transport (the service passes none).
    file: /[\\/]node_modules[\\/]pino[\\/]pino\.js$/,
    edits: [["normalize(instance, caller(), ...args)", "normalize(instance, args[0]?.transport ? caller() : undefined, ...args)"]],
  },
  {
    // protovalidate compiles the CEL of every standard rule of a rule type (StringRules: ~80 expressions)
    // the first time a message uses any rule of that type, although it evaluates only those of the rules a
    // field sets that its native checks do not cover (often none). Compiled on first read instead, a rule
    // that is used is still compiled when the validation plan is built (the validate interceptor has every
    // plan built as soon as the service is ready), and one that is never used is never compiled: ~100 ms
    // less start-up. compileRule never throws (a failure becomes a result it reports on use), so the results are
    // the same.
    file: /[\\/]node_modules[\\/]@bufbuild[\\/]protovalidate[\\/]dist[\\/]esm[\\/]cel\.js$/,
    edits: [
      ["compileRulesUncached(descMessage) {", "compileRulesUncached(descMessage) {\n        const manager = this;"],
      [
        "compiled: this.compileRule(rule),",
        'get compiled() { const compiled = manager.compileRule(rule); Object.defineProperty(this, "compiled", { value: compiled }); return compiled; },',
      ],
    ],
  },
];

export const bundlePatches: Plugin = {
  name: "bundle-patches",
  setup(b) {
    for (const { file, edits } of patches) {
      b.onLoad({ filter: file }, async (args) => {
        let contents = await readFile(args.path, "utf8");
        for (const [find, replace] of edits) {
          if (!contents.includes(find)) throw new Error(`${args.path}: "${find}" not found: see scripts/bundle-patches.ts`);
          contents = contents.replaceAll(find, replace);
        }
        return { contents, loader: "js" };
      });
    }
  },
};
