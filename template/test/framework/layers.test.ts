import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import { mkdir, mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { dirname, join, resolve } from "node:path";
import { after, describe, test } from "node:test";
import { promisify } from "node:util";
import { importsOf } from "../../scripts/layers.js";

const run = promisify(execFile);
const root = resolve(import.meta.dirname, "../..");

/** Runs the layer check `make lint` runs (`npm run lint:layers`) on the tree at `dir`; resolves to its exit code and report. */
async function checkLayers(dir: string): Promise<{ code: number; report: string }> {
  try {
    const { stdout } = await run(process.execPath, ["--import", "tsx", "scripts/layers.ts", dir], { cwd: root });
    return { code: 0, report: stdout };
  } catch (err) {
    const { code, stdout, stderr } = err as { code: number; stdout: string; stderr: string };
    return { code, report: stdout + stderr };
  }
}

describe("framework layers (make lint)", () => {
  const dirs: string[] = [];
  after(() => Promise.all(dirs.map((d) => rm(d, { recursive: true, force: true }))));

  /** A scratch tree with these files (path → source), shaped like the framework's. */
  async function tree(files: Record<string, string>): Promise<string> {
    const dir = await mkdtemp(join(tmpdir(), "layers-"));
    dirs.push(dir);
    for (const [path, source] of Object.entries(files)) {
      await mkdir(dirname(join(dir, path)), { recursive: true });
      await writeFile(join(dir, path), source);
    }
    return dir;
  }

  test("the framework as it is passes the layer rules, and lint:layers runs this check", async () => {
    const { code, report } = await checkLayers(root);
    assert.equal(code, 0, report);
    assert.match(report, /no layer violations found \(\d+ modules, \d+ dependencies checked\)/);
    const pkg = JSON.parse(await readFile(join(root, "package.json"), "utf8"));
    assert.equal(pkg.scripts["lint:layers"], "node --import tsx scripts/layers.ts");
    assert.match(pkg.scripts.lint, /npm run --silent lint:layers/);
  });

  test("every import form counts, type-only ones included", () => {
    const source = [
      'import a from "./a.js";',
      'import type { B } from "./b.js";',
      'import { type C } from "./c.js";',
      'import "./d.js";',
      'export * from "./e.js";',
      'export type { F } from "./f.js";',
      'export { g } from "./g.js";',
      'import h = require("./h.js");',
      'const i = await import("./i.js");',
      "const j = await import(`./j.js`);",
      'type K = import("./k.js").K;',
      "function l(x: typeof import('./l.js')): void {}",
      'const m = require("./m.js");',
      "const n = await import(`./${a}.js`); // not a literal: no file to name",
      'const o = "./o.js"; // a string, not an import',
    ].join("\n");
    const specifiers = ["a", "b", "c", "d", "e", "f", "g", "h", "i", "j", "k", "l", "m"].map((x) => `./${x}.js`);
    assert.deepEqual(importsOf(source, "x.ts"), specifiers);
  });

  test("the call model importing another framework folder fails, type-only imports included", async () => {
    const dir = await tree({
      "src/framework/logging/logger.ts": "export const level = 'info'; export type Level = string;\n",
      "src/framework/call/context.ts": 'import { level } from "../logging/logger.js";\nexport const x = level;\n',
      "src/framework/call/types.ts": 'import type { Level } from "../logging/logger.js";\nexport type L = Level;\n',
      "src/framework/call/inline.ts": 'export type L = import("../logging/logger.js").Level;\n',
      "src/framework/call/status.ts": "export const OK = 0;\n",
      "src/framework/call/uses-status.ts": 'import { OK } from "./status.js";\nexport const ok = OK;\n',
    });
    const { code, report } = await checkLayers(dir);
    assert.equal(code, 1, report);
    const rule = "call-model-imports-no-framework-folder";
    assert.match(report, new RegExp(`${rule}: src/framework/call/context\\.ts → src/framework/logging/logger\\.ts`));
    assert.match(report, new RegExp(`${rule}: src/framework/call/types\\.ts → src/framework/logging/logger\\.ts`));
    assert.match(report, new RegExp(`${rule}: src/framework/call/inline\\.ts → src/framework/logging/logger\\.ts`));
    assert.doesNotMatch(report, /uses-status/, "call/ importing itself is allowed");
    assert.match(report, new RegExp(`${rule}: call/ is the bottom layer`), "the report says what the rule is for");
  });

  test("a helper importing an interceptor fails", async () => {
    const dir = await tree({
      "src/framework/interceptors/mine.ts": "export const k = 1;\n",
      "src/framework/metrics/registry.ts": "export const r = 1;\n",
      "src/framework/logging/logger.ts":
        'import { k } from "../interceptors/mine.js";\nimport { r } from "../metrics/registry.js";\nexport const l = k + r;\n',
    });
    const { code, report } = await checkLayers(dir);
    assert.equal(code, 1, report);
    assert.match(
      report,
      /helpers-import-only-the-call-model: src\/framework\/logging\/logger\.ts → src\/framework\/interceptors\/mine\.ts/,
    );
    assert.doesNotMatch(report, /registry/, "helpers import each other");
  });

  test("an interceptor importing a transport, or auth importing the root, fails", async () => {
    const dir = await tree({
      "src/framework/server/grpc-adapter.ts": "export const KEY = 'k';\n",
      "src/framework/lifecycle/hooks.ts": "export const HOOK = 'h';\n",
      "src/framework/interceptors/mine.ts": 'export const k = (await import("../server/grpc-adapter.js")).KEY;\n',
      "src/framework/auth/jwt.ts": 'export { HOOK } from "../lifecycle/hooks.js";\n',
    });
    const { code, report } = await checkLayers(dir);
    assert.equal(code, 1, report);
    const rule = "interceptors-and-auth-below-the-transports";
    assert.match(report, new RegExp(`${rule}: src/framework/interceptors/mine\\.ts → src/framework/server/grpc-adapter\\.ts`));
    assert.match(report, new RegExp(`${rule}: src/framework/auth/jwt\\.ts → src/framework/lifecycle/hooks\\.ts`));
  });

  test("anything below the composition root importing it fails; the root imports itself", async () => {
    const dir = await tree({
      "src/framework/lifecycle/hooks.ts": "export interface LifecycleHooks { stop?(): void }\n",
      "src/framework/testing/harness.ts": 'import type { LifecycleHooks } from "../lifecycle/hooks.js";\nexport type H = LifecycleHooks;\n',
      "src/framework/index.ts": 'export * from "./testing/harness.js";\n',
      "src/framework/server/service.ts": 'import type { LifecycleHooks } from "../lifecycle/hooks.js";\nexport type S = LifecycleHooks;\n',
      "src/framework/client/index.ts": 'export type { H } from "../index.js";\n',
    });
    const { code, report } = await checkLayers(dir);
    assert.equal(code, 1, report);
    assert.match(report, /only-the-root-assembles: src\/framework\/server\/service\.ts → src\/framework\/lifecycle\/hooks\.ts/);
    assert.match(report, /only-the-root-assembles: src\/framework\/client\/index\.ts → src\/framework\/index\.ts/);
    assert.doesNotMatch(report, /harness\.ts →|framework\/index\.ts → /, "the root imports itself");
  });

  test("two framework folders importing each other fails, even when no file imports itself round the loop", async () => {
    // server/http-server.ts → gateway/errors.ts and gateway/http-body.ts → server/limits.ts: four files, no file
    // cycle, but the folders are one concern in two places. Each import alone is allowed (transports sit side by side).
    const dir = await tree({
      "src/framework/server/limits.ts": "export const LIMIT = 1;\n",
      "src/framework/server/http-server.ts": 'import { httpError } from "../gateway/errors.js";\nexport const s = httpError;\n',
      "src/framework/gateway/errors.ts": "export const httpError = 'e';\n",
      "src/framework/gateway/http-body.ts": 'import { LIMIT } from "../server/limits.js";\nexport const b = LIMIT;\n',
    });
    const { code, report } = await checkLayers(dir);
    assert.equal(code, 1, report);
    assert.match(
      report,
      /no-cycle-between-framework-folders: src\/framework\/gateway → src\/framework\/server → src\/framework\/gateway\n\s+src\/framework\/gateway\/http-body\.ts → src\/framework\/server\/limits\.ts\n\s+src\/framework\/server\/http-server\.ts → src\/framework\/gateway\/errors\.ts/,
    );

    const oneWay = await tree({
      "src/framework/server/limits.ts": "export const LIMIT = 1;\n",
      "src/framework/gateway/http-body.ts": 'import { LIMIT } from "../server/limits.js";\nexport const b = LIMIT;\n',
    });
    const oneWayCheck = await checkLayers(oneWay);
    assert.equal(oneWayCheck.code, 0, oneWayCheck.report);
  });

  test("a cycle through three folders fails, a type-only step included, and through the service's own code too", async () => {
    const dir = await tree({
      "src/framework/server/a.ts": 'import type { B } from "../gateway/b.js";\nexport type A = B;\n',
      "src/framework/gateway/b.ts": 'import type { C } from "../browser/c.js";\nexport type B = C;\n',
      "src/framework/browser/c.ts": 'export type { D as C } from "../server/d.js";\n',
      "src/framework/server/d.ts": "export type D = number;\n",
      "src/framework/health/e.ts": 'export { f } from "../../service/f.js";\n',
      "src/service/f.ts": 'export { g as f } from "../framework/admin/g.js";\n',
      "src/framework/admin/g.ts": 'import "../health/h.js";\nexport const g = 1;\n',
      "src/framework/health/h.ts": "export {};\n",
    });
    const { code, report } = await checkLayers(dir);
    assert.equal(code, 1, report);
    const rule = "no-cycle-between-framework-folders";
    assert.match(
      report,
      new RegExp(`${rule}: src/framework/server → src/framework/gateway → src/framework/browser → src/framework/server\\n`),
    );
    assert.match(report, new RegExp(`${rule}: src/framework/health → src/service → src/framework/admin → src/framework/health\\n`));
  });

  test("test files and src/gen/ are left out; an import the check cannot resolve fails", async () => {
    const left = await tree({
      "src/framework/lifecycle/app.ts": "export const app = 1;\n",
      "src/framework/call/context.test.ts": 'import { app } from "../lifecycle/app.js";\nexport const x = app;\n',
      "src/gen/x_pb.ts": 'import { app } from "../framework/lifecycle/app.js";\nexport const y = app;\n',
      "src/framework/call/uses-gen.ts":
        'import { y } from "../../gen/x_pb.js";\nimport { z } from "../../gen/not-generated-yet_pb.js";\nexport const u = [y, z];\n',
    });
    const leftCheck = await checkLayers(left);
    assert.equal(leftCheck.code, 0, leftCheck.report);

    const broken = await tree({
      "src/framework/call/context.ts": 'import { level } from "../logging/gone.js";\nexport const x = level;\n',
    });
    const { code, report } = await checkLayers(broken);
    assert.equal(code, 1, report);
    assert.match(report, /unresolvable-import: src\/framework\/call\/context\.ts → \.\.\/logging\/gone\.js/);
  });
});
