// The framework's own development tooling (template/framework-dev.json) stays in the template and out of a
// generated repo: generation leaves the listed files, devDependencies and their lockfile entries out, and
// `update` from a version that still shipped them removes them where the team never changed them.
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import fs from "node:fs";
import path from "node:path";
import { describe, it } from "node:test";
import { isFrameworkDev, MANIFEST_FILE, pruneLockfile, readManifest } from "../../generator/framework-dev.js";
import { listTemplateFiles } from "../../generator/render.js";
import { git, gitEnv, listFiles, makeSyntheticTemplate, REAL_TEMPLATE, REPO, runCli, tmpDir, write } from "./helpers.js";

type LockEntry = {
  dependencies?: Record<string, string>;
  optionalDependencies?: Record<string, string>;
  peerDependencies?: Record<string, string>;
  devDependencies?: Record<string, string>;
};
const json = (v: unknown) => `${JSON.stringify(v, null, 2)}\n`;
const version = (JSON.parse(fs.readFileSync(path.join(REPO, "package.json"), "utf8")) as { version: string }).version;

describe("the real template's framework-dev.json", () => {
  const manifest = readManifest(REAL_TEMPLATE);
  const files = listTemplateFiles(REAL_TEMPLATE);

  it("leaves bench/ (peer servers, ablation, instruction counts, profiling, the soak) and the manifest out of generation", () => {
    assert.ok(fs.existsSync(path.join(REAL_TEMPLATE, "bench/run.ts")), "the tooling stays in the template");
    for (const gone of ["bench/", "framework-dev.json", "test/framework/bench-fixture.test.ts"]) {
      assert.deepEqual(files.filter((f) => f === gone || f.startsWith(gone)), [], `${gone} is not generated`);
    }
    assert.ok(files.includes("scripts/bench.ts"), "the team's own bench is");
    assert.ok(files.includes("Makefile") && files.includes("src/framework/index.ts"));
  });

  it("lists only paths that exist, and devDependencies the template has", () => {
    const pkg = JSON.parse(fs.readFileSync(path.join(REAL_TEMPLATE, "package.json"), "utf8")) as { devDependencies: Record<string, string> };
    for (const p of manifest.paths) assert.ok(fs.existsSync(path.join(REAL_TEMPLATE, p)), `${p} exists`);
    for (const d of manifest.devDependencies) assert.ok(d in pkg.devDependencies, `${d} is a devDependency`);
  });

  it("leaves nothing the generated repo's own targets use: no shipped file imports a left-out devDependency or a left-out path", () => {
    const offenders: string[] = [];
    for (const rel of files.filter((f) => /\.(ts|js|cjs|json)$|(^|\/)Makefile$/.test(f) && !f.startsWith("proto/"))) {
      if (rel === "package-lock.json" || rel === "package.json") continue;
      // Code only: a comment may say where the tooling lives.
      const text = fs
        .readFileSync(path.join(REAL_TEMPLATE, rel), "utf8")
        .split("\n")
        .filter((l) => !/^\s*(\/\/|\/?\*|#)/.test(l))
        .join("\n");
      for (const d of manifest.devDependencies) if (new RegExp(`from ["']${d}["']|import\\(["']${d}["']`).test(text)) offenders.push(`${rel} imports ${d}`);
      for (const dir of manifest.paths.filter((p) => p.endsWith("/"))) {
        const used = new RegExp(`["'\`/]${dir.replace(/[/.]/g, "\\$&")}[\\w./-]*\\.(ts|js|mk)\\b`).test(text);
        if (used && !(rel === "Makefile" && text.includes(`$(wildcard ${dir}`))) offenders.push(`${rel} uses ${dir}`);
      }
    }
    assert.deepEqual(offenders, []);
  });

  it("a directory entry covers the directory and everything under it, a file entry that file only", () => {
    const m = { paths: ["bench/", "a.ts"], devDependencies: [], scripts: [] };
    assert.ok(isFrameworkDev("bench", m, true));
    assert.ok(isFrameworkDev("bench/servers/x.ts", m));
    assert.ok(!isFrameworkDev("benchmarks/x.ts", m));
    assert.ok(isFrameworkDev("a.ts", m));
    assert.ok(!isFrameworkDev("a.ts", m, true));
    assert.ok(!isFrameworkDev("a.tsx", m));
  });
});

describe("pruneLockfile", () => {
  const lock = {
    name: "example",
    lockfileVersion: 3,
    packages: {
      "": { name: "example", dependencies: { keep: "1" }, devDependencies: { "dev-tool": "1", shared: "1" } },
      "node_modules/keep": { version: "1.0.0", dependencies: { shared: "1", nested: "2" } },
      "node_modules/keep/node_modules/nested": { version: "2.0.0" },
      "node_modules/nested": { version: "1.0.0", dev: true },
      "node_modules/shared": { version: "1.0.0" },
      "node_modules/dev-tool": { version: "1.0.0", dev: true, dependencies: { "only-dev": "1", nested: "1" }, optionalDependencies: { "dev-tool-linux": "1" } },
      "node_modules/dev-tool-linux": { version: "1.0.0", dev: true, optional: true },
      "node_modules/only-dev": { version: "1.0.0", dev: true },
    },
  };

  it("drops a left-out devDependency and what only it needed, resolving as Node does", () => {
    const out = JSON.parse(pruneLockfile(JSON.stringify(lock), { paths: [], devDependencies: ["dev-tool"], scripts: [] }));
    assert.deepEqual(Object.keys(out.packages).sort(), ["", "node_modules/keep", "node_modules/keep/node_modules/nested", "node_modules/shared"]);
    assert.deepEqual(out.packages[""].devDependencies, { shared: "1" });
  });

  it("keeps a left-out devDependency that a kept package still needs (as grpc-js needs @grpc/proto-loader)", () => {
    const out = JSON.parse(pruneLockfile(JSON.stringify(lock), { paths: [], devDependencies: ["shared"], scripts: [] }));
    assert.ok(out.packages["node_modules/shared"]);
    assert.deepEqual(out.packages[""].devDependencies, { "dev-tool": "1" });
  });

  it("drops from the real template's lockfile only what the left-out packages alone need: @grpc/proto-loader is grpc-js's dependency too", () => {
    const text = fs.readFileSync(path.join(REAL_TEMPLATE, "package-lock.json"), "utf8");
    const before = JSON.parse(text) as { packages: Record<string, LockEntry> };
    const after = JSON.parse(pruneLockfile(text, readManifest(REAL_TEMPLATE))) as { packages: Record<string, LockEntry> };
    assert.equal(after.packages[""]?.devDependencies?.["@grpc/proto-loader"], undefined);
    assert.ok(after.packages["node_modules/@grpc/proto-loader"]);
    assert.ok(!after.packages["node_modules/kubernetes-models"], "the schema packages (deploy-k8s-schema.test.ts) are left out");
    const dropped = new Set(Object.keys(before.packages).filter((k) => !(k in after.packages)).map((k) => k.slice(k.lastIndexOf("node_modules/") + 13)));
    const needed = Object.values(after.packages).flatMap((p) => Object.keys({ ...p.dependencies, ...p.optionalDependencies, ...p.peerDependencies }));
    assert.deepEqual(needed.filter((name) => dropped.has(name) && !Object.keys(after.packages).some((k) => k.endsWith(`node_modules/${name}`))), []);
  });
});

describe("update from a version that shipped the framework's tooling", () => {
  it("removes the left-out files the team never changed, keeps and lists the ones it did, and drops the devDependency", () => {
    const root = tmpDir("cgs-fwdev-");
    // A: before the manifest existed, everything shipped.
    const a = makeSyntheticTemplate(path.join(root, "a"));
    write(a, "bench/run.ts", "// the framework's benchmark\n");
    write(a, "bench/servers/peer.ts", "// a peer server\n");
    write(a, "bench/edited.ts", "// a script the team will change\n");
    const pkg = JSON.parse(fs.readFileSync(path.join(a, "package.json"), "utf8"));
    pkg.devDependencies = { "bench-only": "1.0.0", typescript: "7.0.2" };
    write(a, "package.json", json(pkg));
    // B: the same with the manifest.
    const b = path.join(root, "b");
    fs.cpSync(a, b, { recursive: true });
    write(b, MANIFEST_FILE, json({ paths: ["bench/"], devDependencies: ["bench-only"] }));

    const repo = path.join(root, "orders-svc");
    const gen = runCli([repo, "--yes", "--no-install"], { template: a, env: gitEnv(root) });
    assert.equal(gen.status, 0, gen.stderr);
    write(repo, "bench/edited.ts", "// a script the team will change\n// changed by the team\n");
    git(repo, root, "commit", "-qam", "team edit");

    const stage = path.join(root, "stage");
    fs.cpSync(a, path.join(stage, "package/template"), { recursive: true });
    write(stage, "package/package.json", json({ name: "create-grpc-svc", version }));
    const tgz = path.join(root, "base.tgz");
    assert.equal(spawnSync("tar", ["-czf", tgz, "-C", stage, "package"]).status, 0);

    const r = runCli(["update", "--base", tgz], { cwd: repo, template: b, env: gitEnv(root) });
    assert.equal(r.status, 0, `${r.stdout}\n${r.stderr}`);
    const files = listFiles(repo);
    assert.ok(!files.includes("bench/run.ts") && !files.includes("bench/servers/peer.ts"), "unchanged tooling is removed");
    assert.ok(files.includes("bench/edited.ts"), "the team's changed file is kept");
    assert.match(r.stdout, /bench\/edited\.ts/);
    assert.ok(!files.includes(MANIFEST_FILE), "the manifest never reaches the repo");
    const after = JSON.parse(fs.readFileSync(path.join(repo, "package.json"), "utf8"));
    assert.deepEqual(after.devDependencies, { typescript: "7.0.2" });
  });
});
