// Biome's import order and line wrapping depend on the names renaming puts in: the real template, rendered
// under names that sort before and after the `grpc`/`google` imports and a long one, must pass `biome check`
// (the Biome part of `make lint`) as written, with no install in between.
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import fs from "node:fs";
import { createRequire } from "node:module";
import path from "node:path";
import { describe, it } from "node:test";
import type { Choices } from "../../generator/env-file.js";
import { deriveNames } from "../../generator/names.js";
import { defaultTemplateDir } from "../../generator/package-root.js";
import { render } from "../../generator/render.js";
import { REPO, tmpDir } from "./helpers.js";

const choices: Choices = { auth: "none", unixSocket: false, sse: true, install: false, git: false };
const biome = createRequire(import.meta.url).resolve("@biomejs/biome/bin/biome");
const version = (dir: string, dep: string) => {
  const pkg = JSON.parse(fs.readFileSync(path.join(dir, "package.json"), "utf8"));
  return pkg.dependencies?.[dep] ?? pkg.devDependencies?.[dep];
};

describe("a generated repository passes Biome whatever its name", () => {
  it("the scaffolder formats with the Biome version the template pins", () => {
    assert.equal(version(REPO, "@biomejs/biome"), version(path.join(REPO, "template"), "@biomejs/biome"));
  });

  for (const name of ["zeta-svc", "aardvark", "an-unusually-long-service-name-for-wrapping-service"]) {
    it(`${name}: biome check finds nothing to fix`, async () => {
      const dir = path.join(tmpDir(), name);
      await render({ templateDir: defaultTemplateDir(), targetDir: dir, names: deriveNames(name), choices });
      const r = spawnSync(process.execPath, [biome, "check", "--colors=off", "src", "test"], { cwd: dir, encoding: "utf8" });
      assert.equal(r.status, 0, `${r.stdout}${r.stderr}`.slice(-3000));
    });
  }
});
