// oxfmt's import order and line wrapping depend on the names renaming puts in: the real template, rendered
// under names that sort before and after the `grpc`/`google` imports and a long one, must pass oxlint and
// `oxfmt --check` (the lint and format part of `make lint`) as written, with no install in between.
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
// Both packages' exports leave out their bin: found beside their package.json.
const bin = (pkg: string) => path.join(path.dirname(createRequire(import.meta.url).resolve(`${pkg}/package.json`)), `bin/${pkg}`);
const version = (dir: string, dep: string) => {
  const pkg = JSON.parse(fs.readFileSync(path.join(dir, "package.json"), "utf8"));
  return pkg.dependencies?.[dep] ?? pkg.devDependencies?.[dep];
};

describe("a generated repository passes oxlint and oxfmt whatever its name", () => {
  it("the scaffolder formats with the oxfmt version the template pins, and lints with its oxlint", () => {
    assert.equal(version(REPO, "oxfmt"), version(path.join(REPO, "template"), "oxfmt"));
    assert.equal(version(REPO, "oxlint"), version(path.join(REPO, "template"), "oxlint"));
  });

  for (const name of ["zeta-svc", "aardvark", "an-unusually-long-service-name-for-wrapping-service"]) {
    it(`${name}: oxfmt --check finds nothing to change and oxlint nothing to report`, async () => {
      const dir = path.join(tmpDir(), name);
      await render({ templateDir: defaultTemplateDir(), targetDir: dir, names: deriveNames(name), choices });
      const paths = ["src", "test", "generators", "scripts"];
      const fmt = spawnSync(process.execPath, [bin("oxfmt"), "--check", ...paths], { cwd: dir, encoding: "utf8" });
      assert.equal(fmt.status, 0, `${fmt.stdout}${fmt.stderr}`.slice(-3000));
      const lint = spawnSync(process.execPath, [bin("oxlint"), "--deny-warnings", ...paths], { cwd: dir, encoding: "utf8" });
      assert.equal(lint.status, 0, `${lint.stdout}${lint.stderr}`.slice(-3000));
    });
  }
});
