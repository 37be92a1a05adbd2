import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import { mkdir, mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { dirname, join, resolve } from "node:path";
import { after, describe, test } from "node:test";
import { promisify } from "node:util";

const run = promisify(execFile);
const root = resolve(import.meta.dirname, "../..");
const depcruise = join(root, "node_modules/dependency-cruiser/bin/dependency-cruiser.mjs");
const config = join(root, ".dependency-cruiser.cjs");

/** Runs the layer check `make lint` runs, in `cwd`; resolves to its exit code and report. */
async function checkLayers(cwd: string): Promise<{ code: number; report: string }> {
  try {
    const { stdout } = await run(process.execPath, [depcruise, "src", "--config", config, "--output-type", "err"], { cwd });
    return { code: 0, report: stdout };
  } catch (err) {
    const { code, stdout } = err as { code: number; stdout: string };
    return { code, report: stdout };
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

  test("the framework as it is passes the layer rules", async () => {
    const { code, report } = await checkLayers(root);
    assert.equal(code, 0, report);
  });

  test("the call model importing another framework folder fails, type-only imports included", async () => {
    const dir = await tree({
      "src/framework/logging/logger.ts": "export const level = 'info'; export type Level = string;\n",
      "src/framework/call/context.ts": 'import { level } from "../logging/logger.js";\nexport const x = level;\n',
      "src/framework/call/types.ts": 'import type { Level } from "../logging/logger.js";\nexport type L = Level;\n',
    });
    const { code, report } = await checkLayers(dir);
    assert.notEqual(code, 0);
    assert.match(report, /call-model-imports-no-framework-folder: src\/framework\/call\/context\.ts → src\/framework\/logging\/logger\.ts/);
    assert.match(report, /call-model-imports-no-framework-folder: src\/framework\/call\/types\.ts → src\/framework\/logging\/logger\.ts/);
  });

  test("an interceptor importing a transport, or a helper importing an interceptor, fails", async () => {
    const dir = await tree({
      "src/framework/server/grpc-adapter.ts": "export const KEY = 'k';\n",
      "src/framework/interceptors/mine.ts": 'import { KEY } from "../server/grpc-adapter.js";\nexport const k = KEY;\n',
      "src/framework/logging/logger.ts": 'import { k } from "../interceptors/mine.js";\nexport const l = k;\n',
    });
    const { code, report } = await checkLayers(dir);
    assert.notEqual(code, 0);
    assert.match(
      report,
      /interceptors-and-auth-below-the-transports: src\/framework\/interceptors\/mine\.ts → src\/framework\/server\/grpc-adapter\.ts/,
    );
    assert.match(
      report,
      /helpers-import-only-the-call-model: src\/framework\/logging\/logger\.ts → src\/framework\/interceptors\/mine\.ts/,
    );
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
    assert.notEqual(code, 0);
    assert.match(
      report,
      /no-cycle-between-framework-folders: src\/framework\/gateway → \s*src\/framework\/server →\s*src\/framework\/gateway/,
    );

    const oneWay = await tree({
      "src/framework/server/limits.ts": "export const LIMIT = 1;\n",
      "src/framework/gateway/http-body.ts": 'import { LIMIT } from "../server/limits.js";\nexport const b = LIMIT;\n',
    });
    const oneWayCheck = await checkLayers(oneWay);
    assert.equal(oneWayCheck.code, 0, oneWayCheck.report);
  });

  test("anything below the composition root importing it fails", async () => {
    const dir = await tree({
      "src/framework/lifecycle/hooks.ts": "export interface LifecycleHooks { stop?(): void }\n",
      "src/framework/server/service.ts": 'import type { LifecycleHooks } from "../lifecycle/hooks.js";\nexport type S = LifecycleHooks;\n',
    });
    const { code, report } = await checkLayers(dir);
    assert.notEqual(code, 0);
    assert.match(report, /only-the-root-assembles: src\/framework\/server\/service\.ts → src\/framework\/lifecycle\/hooks\.ts/);
  });
});
