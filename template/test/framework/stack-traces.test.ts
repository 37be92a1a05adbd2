// dist/main.js maps stack traces to src/ itself, reading a source map only when a trace needs it
// (scripts/entry.ts), instead of Node's own support, which reads every map at start-up. Its traces must be the
// ones Node writes: one small bundle is run both ways and the stacks compared line for line.
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, test } from "node:test";
import { fileURLToPath } from "node:url";
import { build } from "esbuild";

const ROOT = fileURLToPath(new URL("../..", import.meta.url));
const dir = mkdtempSync(join(tmpdir(), "stack-traces-"));

// Thrown from a constructor, a static and an async method, a callback of a built-in and Node itself; the
// stacks are printed once the module has run.
const FIXTURE = `
class Thing {
  constructor(readonly n: number) {
    if (n < 0) throw new Error("negative");
  }
  static make(n: number): Thing {
    return new Thing(n);
  }
  async method(): Promise<string> {
    await null;
    return inner(this.n);
  }
}
function inner(n: number): string {
  const fail = () => {
    throw new RangeError(\`inner \${n}\`);
  };
  return [1].map(fail)[0] ?? "";
}
const stacks: string[] = [];
try { Thing.make(-1); } catch (e) { stacks.push((e as Error).stack ?? ""); }
try { await Thing.make(2).method(); } catch (e) { stacks.push((e as Error).stack ?? ""); }
try { Buffer.alloc(-1); } catch (e) { stacks.push((e as Error).stack ?? ""); }
process.stdout.write(JSON.stringify(stacks));
`;

before(async () => {
  writeFileSync(join(dir, "package.json"), '{ "type": "module" }\n');
  writeFileSync(join(dir, "fixture.ts"), FIXTURE);
  const common = { bundle: true, platform: "node", format: "esm", target: "node20", logLevel: "warning" } as const;
  await build({ ...common, entryPoints: [join(dir, "fixture.ts")], outfile: join(dir, "service.js"), sourcemap: true });
  await build({ ...common, entryPoints: [join(ROOT, "scripts/entry.ts")], outfile: join(dir, "main.js"), external: ["./service.js"] });
  // The same bundle loaded the same way, with Node's own source-map support, and without any.
  writeFileSync(join(dir, "node-maps.js"), 'process.setSourceMapsEnabled(true);\nawait import("./service.js");\n');
  writeFileSync(join(dir, "plain.js"), 'await import("./service.js");\n');
});
after(() => rmSync(dir, { recursive: true, force: true }));

/** The stacks the fixture prints, run through `entry`; the frames of the entry itself and Node's loader under it are cut. */
function stacks(entry: string, env: Record<string, string> = {}): string[] {
  const out = execFileSync(process.execPath, [entry], { cwd: dir, env: { PATH: process.env.PATH, ...env }, encoding: "utf8" });
  return (JSON.parse(out) as string[]).map((stack) =>
    stack.replace(/\n {4}at [^\n]*(?:node:internal\/modules|[\\/](?:main|node-maps|plain)\.js:)[^\n]*/g, ""),
  );
}

test("dist/main.js writes the stack traces Node's source-map support writes, naming the original files", () => {
  const ours = stacks("main.js");
  const node = stacks("node-maps.js");
  assert.equal(ours.length, 3);
  assert.deepEqual(ours, node);
  assert.match(ours[0]!, /at new _?Thing \(.*fixture\.ts:4:\d+\)/);
  assert.match(ours[1]!, /at async .*fixture\.ts:\d+:\d+/);
  assert.match(ours[2]!, /^RangeError \[ERR_OUT_OF_RANGE\]/);
  for (const stack of ours) assert.doesNotMatch(stack, /service\.js/, stack);
});

test("SOURCE_MAPS=false leaves the bundle's own positions", () => {
  const ours = stacks("main.js", { SOURCE_MAPS: "false" });
  assert.deepEqual(ours, stacks("plain.js"));
  assert.match(ours[0]!, /service\.js:\d+:\d+/);
});
