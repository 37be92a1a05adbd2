// scripts/bundle-patches.ts edits a few dependencies as the build bundles them so that parts the service's start
// never uses are loaded on first use instead. The edits must change when that code loads, never what comes out:
// one fixture is bundled with and without them, and both bundles answer the same requests (fastify's inject,
// through the real plugins) with the same bytes. The patched one must load those parts only when asked.
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, test } from "node:test";
import { fileURLToPath } from "node:url";
import { build, type Plugin } from "esbuild";
import { bundlePatches } from "../../scripts/bundle-patches.js";

const ROOT = fileURLToPath(new URL("../..", import.meta.url));
const dir = mkdtempSync(join(tmpdir(), "bundle-patches-"));

/** The packages the patches load on first use. */
const LAZY = ["mime-db", "minipass", "readable-stream", "@fastify/ajv-compiler", "@fastify/fast-json-stringify-compiler"];

/** Marks each of those packages as loaded when its code first runs. */
const marker: Plugin = {
  name: "marker",
  setup(b) {
    const filter = new RegExp(`[\\\\/]node_modules[\\\\/](${LAZY.join("|").replace(/\//g, "[\\\\/]")})[\\\\/].*\\.js$`);
    b.onLoad({ filter }, async (args) => {
      const name = LAZY.find((p) => args.path.replace(/\\/g, "/").includes(`/node_modules/${p}/`));
      const { readFile } = await import("node:fs/promises");
      return { contents: `globalThis.__loaded.add(${JSON.stringify(name)});\n${await readFile(args.path, "utf8")}`, loader: "js" };
    });
  },
};

// Every path that reaches a lazily loaded part: a type only mime-db knows, a streamed body (readable-stream's
// Transform), an already-gzipped stream (minipass), a gzipped body inflated for a client that accepts no encoding
// (readable-stream's Readable), a gzipped request body, and routes with a body and a response schema (ajv,
// fast-json-stringify).
const FIXTURE = `
import { Readable } from "node:stream";
import { gzipSync } from "node:zlib";
import compress from "@fastify/compress";
import Fastify from "fastify";

const text = "compressible text ".repeat(200);
const show = (r) => ({ status: r.statusCode, type: r.headers["content-type"], encoding: r.headers["content-encoding"] ?? null, body: r.rawPayload.toString("base64") });
const results = [];
const app = Fastify();
await app.register(compress, { global: true, threshold: 1024, encodings: ["gzip"], customTypes: /^text\\//, inflateIfDeflated: true });
app.get("/small", async (_req, reply) => reply.type("text/plain").send("ok"));
app.get("/xml", async (_req, reply) => reply.type("application/xml").send("<a>" + text + "</a>"));
app.get("/stream", async (_req, reply) => reply.type("text/plain").send(Readable.from([text, text])));
app.get("/gzipped-stream", async (_req, reply) => reply.type("text/plain").send(Readable.from([gzipSync(text)])));
app.get("/gzipped", async (_req, reply) => reply.type("text/plain").send(gzipSync(text)));
app.post("/upload", async (req) => ({ length: JSON.stringify(req.body).length }));
await app.ready();
results.push(show(await app.inject({ url: "/small", headers: { "accept-encoding": "gzip" } })));
const before = [...globalThis.__loaded].sort();
for (const url of ["/xml", "/stream", "/gzipped-stream"]) results.push(show(await app.inject({ url, headers: { "accept-encoding": "gzip" } })));
results.push(show(await app.inject({ url: "/gzipped" })));
results.push(
  show(
    await app.inject({
      method: "POST",
      url: "/upload",
      headers: { "content-type": "application/json", "content-encoding": "gzip" },
      payload: gzipSync(JSON.stringify({ text })),
    }),
  ),
);
await app.close();
const schemas = Fastify();
schemas.post(
  "/sum",
  {
    schema: {
      body: { type: "object", required: ["a", "b"], properties: { a: { type: "integer" }, b: { type: "integer" } } },
      response: { 200: { type: "object", properties: { sum: { type: "integer" } } } },
    },
  },
  async (req) => ({ sum: req.body.a + req.body.b, extra: "not in the response schema" }),
);
for (const payload of [{ a: 1, b: 2 }, { a: 1 }, { a: "x", b: 2 }]) results.push(show(await schemas.inject({ method: "POST", url: "/sum", payload })));
await schemas.close();
process.stdout.write(JSON.stringify({ before, after: [...globalThis.__loaded].sort(), results }));
`;

interface Outcome {
  before: string[];
  after: string[];
  results: { status: number; type: string; encoding: string | null; body: string }[];
}
let patched: Outcome;
let published: Outcome;

async function bundleAndRun(name: string, plugins: Plugin[]): Promise<Outcome> {
  await build({
    entryPoints: [join(dir, "fixture.js")],
    outfile: join(dir, `${name}.js`),
    bundle: true,
    platform: "node",
    format: "esm",
    target: "node20",
    nodePaths: [join(ROOT, "node_modules")],
    // The set the marker fills, made before any bundled code runs.
    banner: {
      js: 'import { createRequire } from "node:module";\nconst require = createRequire(import.meta.url);\nglobalThis.__loaded = new Set();',
    },
    plugins,
    logLevel: "warning",
  });
  const out = execFileSync(process.execPath, [join(dir, `${name}.js`)], { cwd: dir, encoding: "utf8" });
  return JSON.parse(out) as Outcome;
}

before(async () => {
  writeFileSync(join(dir, "package.json"), '{ "type": "module" }\n');
  writeFileSync(join(dir, "fixture.js"), FIXTURE);
  patched = await bundleAndRun("patched", [bundlePatches, marker]);
  published = await bundleAndRun("published", [marker]);
});
after(() => rmSync(dir, { recursive: true, force: true }));

test("the patched bundle answers every request with the bytes the published packages give", () => {
  assert.equal(patched.results.length, 9);
  assert.deepEqual(patched.results, published.results);
  // The requests did reach what they exercise: compressed, inflated, validated and serialized.
  const [small, xml, stream, gzippedStream, inflated, upload, sum, missing, wrongType] = patched.results as Outcome["results"];
  assert.equal(small?.encoding, null);
  for (const r of [xml, stream, gzippedStream]) assert.equal(r?.encoding, "gzip");
  assert.equal(inflated?.encoding, null);
  assert.equal(upload?.status, 200);
  assert.equal(Buffer.from(sum?.body ?? "", "base64").toString(), '{"sum":3}');
  assert.deepEqual([missing?.status, wrongType?.status], [400, 400]);
});

test("the patched bundle loads mime-db, minipass, readable-stream and fastify's schema compilers only on first use", () => {
  assert.deepEqual(patched.before, [], "nothing loaded by starting a server and answering a small response");
  assert.deepEqual(patched.after, [...LAZY].sort(), "each loaded by the request that needs it");
  assert.deepEqual(published.before, [...LAZY].sort(), "the published packages load them all up front");
});
