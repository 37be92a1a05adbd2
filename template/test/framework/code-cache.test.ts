// dist/main.js (scripts/entry.ts) runs the bundle with the V8 code cache in dist/service.cache, which the build
// writes after one start to ready. A cache is a speed-up only: whatever state it is in (missing, made from
// another bundle, damaged, unwritable), the bundle runs as it is on disk. A small bundle, wrapped as
// scripts/build.ts wraps the service, stands in for the service.
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, test } from "node:test";
import { fileURLToPath } from "node:url";
import { crc32 } from "node:zlib";
import { build } from "esbuild";

const ROOT = fileURLToPath(new URL("../..", import.meta.url));
const dir = mkdtempSync(join(tmpdir(), "code-cache-"));
const bundle = join(dir, "service.js");
const cache = join(dir, "service.cache");

// Enough functions, and one called only after an await (compiled lazily), for V8 to have code worth caching.
const FIXTURE = `
const answer = (x: number) => x * 6;
function label(): string {
  return "AAAA";
}
await null;
process.stdout.write(JSON.stringify({ answer: answer(7), label: label(), url: import.meta.url.endsWith("/service.js") }));
`;

before(async () => {
  writeFileSync(join(dir, "package.json"), '{ "type": "module" }\n');
  writeFileSync(join(dir, "fixture.ts"), FIXTURE);
  const common = { bundle: true, platform: "node", format: "esm", target: "node20", logLevel: "warning" } as const;
  await build({
    ...common,
    entryPoints: [join(dir, "fixture.ts")],
    outfile: bundle,
    // As scripts/build.ts writes dist/service.js.
    banner: { js: '(async function (require, __importMetaUrl, __distDir) { "use strict";' },
    footer: { js: "})" },
    define: { "import.meta.url": "__importMetaUrl", "import.meta.dirname": "__distDir" },
  });
  await build({ ...common, entryPoints: [join(ROOT, "scripts/entry.ts")], outfile: join(dir, "main.js") });
});
after(() => rmSync(dir, { recursive: true, force: true }));

const run = (): unknown =>
  JSON.parse(execFileSync(process.execPath, ["main.js"], { cwd: dir, encoding: "utf8", stdio: ["ignore", "pipe", "pipe"] }));
const leftovers = () => readdirSync(dir).filter((f) => f.endsWith(".tmp"));

test("the first start writes the cache, tagged with the bundle's CRC-32; later starts read it and leave it as it is", () => {
  rmSync(cache, { force: true });
  assert.deepEqual(run(), { answer: 42, label: "AAAA", url: true });
  const written = readFileSync(cache);
  assert.equal(written.readUInt32LE(0), crc32(readFileSync(bundle)));
  assert.ok(written.length > 100);
  const mtime = statSync(cache).mtimeMs;
  assert.deepEqual(run(), { answer: 42, label: "AAAA", url: true });
  assert.deepEqual(readFileSync(cache), written, "an accepted cache is not rewritten");
  assert.equal(statSync(cache).mtimeMs, mtime);
  assert.deepEqual(leftovers(), []);
});

test("a cache made from another bundle of the same length is not used: the bundle on disk runs", () => {
  rmSync(cache, { force: true });
  run();
  // V8 checks only the source's length: without the CRC a cache of the old bundle would run its code.
  const source = readFileSync(bundle, "utf8");
  writeFileSync(bundle, source.replace('"AAAA"', '"BBBB"'));
  try {
    assert.deepEqual(run(), { answer: 42, label: "BBBB", url: true });
    assert.equal(readFileSync(cache).readUInt32LE(0), crc32(readFileSync(bundle)), "rewritten for the new bundle");
    assert.deepEqual(run(), { answer: 42, label: "BBBB", url: true });
  } finally {
    writeFileSync(bundle, source);
  }
});

test("a damaged cache is rejected by V8: the bundle runs from source and the cache is written again", () => {
  const header = Buffer.alloc(4);
  header.writeUInt32LE(crc32(readFileSync(bundle)));
  writeFileSync(cache, Buffer.concat([header, Buffer.alloc(4096, 7)]));
  assert.deepEqual(run(), { answer: 42, label: "AAAA", url: true });
  const rewritten = readFileSync(cache);
  assert.notDeepEqual(rewritten.subarray(4, 4100), Buffer.alloc(4096, 7));
  assert.deepEqual(run(), { answer: 42, label: "AAAA", url: true });
  assert.deepEqual(readFileSync(cache), rewritten);
});

test("a start that fails before it is ready writes no cache", () => {
  rmSync(cache, { force: true });
  const source = readFileSync(bundle, "utf8");
  writeFileSync(bundle, source.replace("await null;", 'await null; throw new Error("no start");'));
  try {
    assert.throws(() => run(), /no start/);
    assert.ok(!existsSync(cache));
  } finally {
    writeFileSync(bundle, source);
  }
});

test("a cache that cannot be read or written (here a directory in its place) costs only the speed", () => {
  rmSync(cache, { force: true });
  mkdirSync(join(cache, "taken"), { recursive: true });
  try {
    assert.deepEqual(run(), { answer: 42, label: "AAAA", url: true });
    assert.ok(statSync(cache).isDirectory());
    assert.deepEqual(leftovers(), [], "no temporary file left behind");
  } finally {
    rmSync(cache, { recursive: true, force: true });
  }
});
