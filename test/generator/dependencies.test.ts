// A generated repo's dependencies are those its own targets use (SPEC §4.18: node_modules after npm install
// ≤ 250 MB): the package.json and package-lock.json generation writes hold none of the tooling taken out of it.
// The size itself is measured where the e2e test installs a generated repo (test/e2e/generate.test.ts).
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import fs from "node:fs";
import path from "node:path";
import { before, describe, it } from "node:test";
import type { Choices } from "../../generator/env-file.js";
import { deriveNames } from "../../generator/names.js";
import { render } from "../../generator/render.js";
import { REAL_TEMPLATE, tmpDir, write } from "./helpers.js";

const choices: Choices = { auth: "none", unixSocket: false, sse: true, install: false, git: false };

interface Lock {
  packages: Record<string, { version?: string }>;
}

/** Taken out, each with its replacement or reason. */
const GONE: Record<string, string> = {
  "@biomejs/biome": "oxlint and oxfmt lint and format the code (37 MB where Biome took 97 MB)",
  "kubernetes-models": "the Kubernetes schema check of deploy/k8s is the framework's (framework-dev.json)",
  "@kubernetes-models/prometheus-operator": "the ServiceMonitor's schema check too",
  plop: "make new-* runs generators/cli.ts, which asks with node:readline (plop and its deps took 23 MB)",
  "node-plop": "plop's engine",
  inquirer: "plop's prompts",
  rxjs: "inquirer's event streams (11 MB)",
  handlebars: "plop's templates: the generators' are template literals (generators/templates/)",
};

describe("the dependencies of a generated repository", () => {
  let lock: Lock;
  let pkg: { dependencies: Record<string, string>; devDependencies: Record<string, string>; scripts: Record<string, string> };

  before(async () => {
    const dir = path.join(tmpDir(), "orders-svc");
    await render({ templateDir: REAL_TEMPLATE, targetDir: dir, names: deriveNames("orders-svc"), choices });
    lock = JSON.parse(fs.readFileSync(path.join(dir, "package-lock.json"), "utf8")) as Lock;
    pkg = JSON.parse(fs.readFileSync(path.join(dir, "package.json"), "utf8"));
  });

  it("one TypeScript: protoc-gen-es's plugin framework uses the repo's (TypeScript 7), not a 30 MB TypeScript 5 of its own", () => {
    const copies = Object.keys(lock.packages).filter((p) => /(^|\/)node_modules\/typescript$/.test(p));
    assert.deepEqual(copies, ["node_modules/typescript"]);
    assert.match(lock.packages["node_modules/typescript"]?.version ?? "", /^7\./);
  });

  for (const [name, why] of Object.entries(GONE)) {
    it(`no ${name}: ${why}`, () => {
      assert.equal(pkg.dependencies[name] ?? pkg.devDependencies[name], undefined);
      // A scoped package's whole scope (its per-platform binaries with it).
      const installed = (p: string) => p.slice(p.lastIndexOf("node_modules/") + 13);
      const gone = name.startsWith("@") ? (p: string) => installed(p).startsWith(`${name.split("/")[0]}/`) : (p: string) => installed(p) === name;
      assert.deepEqual(Object.keys(lock.packages).filter(gone), []);
    });
  }

  it("postinstall deletes buf's protoc plugins (50 MB) on every platform and swagger-ui-dist's maps and unserved bundles (10 MB), and nothing else", () => {
    const dir = tmpDir();
    const bins = {
      "buf-linux-x64": ["buf", "protoc-gen-buf-breaking", "protoc-gen-buf-lint"],
      "buf-win32-x64": ["buf.exe", "protoc-gen-buf-breaking.exe", "protoc-gen-buf-lint.exe"],
    };
    for (const [platform, files] of Object.entries(bins)) for (const f of files) write(dir, `node_modules/@bufbuild/${platform}/bin/${f}`, "binary");
    write(dir, "node_modules/@bufbuild/protobuf/package.json", "{}");
    const served = ["index.css", "swagger-ui.css", "swagger-ui-bundle.js", "swagger-ui-standalone-preset.js", "oauth2-redirect.js", "package.json", "LICENSE"];
    const unserved = ["swagger-ui.js", "swagger-ui-es-bundle.js", "swagger-ui-es-bundle-core.js", "swagger-ui-bundle.js.map", "swagger-ui.css.map"];
    for (const f of [...served, ...unserved]) write(dir, `node_modules/swagger-ui-dist/${f}`, "x");
    const script = pkg.scripts.postinstall ?? "";
    const r = spawnSync(script, { cwd: dir, shell: true, encoding: "utf8" });
    assert.equal(r.status, 0, r.stderr);
    assert.deepEqual(fs.readdirSync(path.join(dir, "node_modules/@bufbuild/buf-linux-x64/bin")), ["buf"]);
    assert.deepEqual(fs.readdirSync(path.join(dir, "node_modules/@bufbuild/buf-win32-x64/bin")), ["buf.exe"]);
    assert.ok(fs.existsSync(path.join(dir, "node_modules/@bufbuild/protobuf/package.json")));
    assert.deepEqual(fs.readdirSync(path.join(dir, "node_modules/swagger-ui-dist")).sort(), [...served].sort());
    // With no dependencies installed (the image's production stage has no buf), it does nothing.
    assert.equal(spawnSync(script, { cwd: tmpDir(), shell: true }).status, 0);
  });
});
