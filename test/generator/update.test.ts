// `create-grpc-svc update` on small synthetic templates: a repo is generated from template A by the real CLI
// (with git), edited, and updated to template B with A given as a real tarball (--base). The rules for
// package.json and for "yours" are also checked directly.
import assert from "node:assert/strict";
import { spawn, spawnSync } from "node:child_process";
import fs from "node:fs";
import path from "node:path";
import { before, describe, it } from "node:test";
import { mergePackageJson } from "../../generator/merge-package-json.js";
import { isYours } from "../../generator/ownership.js";
import { compareVersions, parseRecord, RECORD_FILE } from "../../generator/record.js";
import { git, gitEnv, makeSyntheticTemplate, REPO, runCli, tmpDir, write } from "./helpers.js";

const version = (JSON.parse(fs.readFileSync(path.join(REPO, "package.json"), "utf8")) as { version: string }).version;
const json = (v: unknown) => `${JSON.stringify(v, null, 2)}\n`;
const lines = (prefix: string, n: number) => Array.from({ length: n }, (_, i) => `// ${prefix} line ${i + 1}`).join("\n") + "\n";

/** Template A: the synthetic template plus framework and service files to edit. */
function templateA(root: string): string {
  const t = makeSyntheticTemplate(root);
  write(t, "src/framework/merged.ts", lines("merged", 20));
  write(t, "src/framework/untouched.ts", lines("untouched", 5));
  write(t, "src/framework/overlap.ts", lines("overlap", 5));
  write(t, "src/framework/gone.ts", lines("gone", 3));
  write(t, "src/framework/gone-edited.ts", lines("gone-edited", 3));
  // The generators as plop ran them (before generators/): a file and a folder of templates, gone in B.
  write(t, "plopfile.js", lines("plopfile", 3));
  write(t, "plop/templates/service.ts.hbs", lines("hbs", 3));
  write(t, "src/service/example-service.ts", "export const service = 1;\n");
  write(t, "test/example-service.test.ts", "// the service's own test\n");
  write(t, "test/framework/chain.test.ts", "// a framework test\n");
  write(t, "package.json", json({
    name: "example",
    version: "0.1.0",
    scripts: { generate: "buf generate proto/example", test: "node --test", lint: "biome check" },
    dependencies: { "@grpc/grpc-js": "1.14.7", fastify: "5.6.0", pino: "9.0.0" },
  }));
  return t;
}

/** Template B: A with framework changes, service changes (which must not reach the repo) and package.json changes. */
function templateB(root: string, a: string): string {
  const t = path.join(root, "template-b");
  fs.cpSync(a, t, { recursive: true });
  const edit = (rel: string, fn: (s: string) => string) => write(t, rel, fn(fs.readFileSync(path.join(t, rel), "utf8")));
  edit("src/framework/merged.ts", (s) => s.replace("// merged line 18\n", "// merged line 18 (fixed in B)\n"));
  edit("src/framework/untouched.ts", (s) => `${s}// added in B\n`);
  edit("src/framework/overlap.ts", (s) => s.replace("// overlap line 3\n", "// overlap line 3 as B has it\n"));
  edit("src/framework/gone-edited.ts", (s) => s); // kept below, removed next
  fs.rmSync(path.join(t, "src/framework/gone.ts"));
  fs.rmSync(path.join(t, "src/framework/gone-edited.ts"));
  write(t, "src/framework/new.ts", "// new in B\n");
  fs.rmSync(path.join(t, "plopfile.js"));
  fs.rmSync(path.join(t, "plop"), { recursive: true });
  write(t, "generators/cli.ts", "// new in B\n");
  edit("src/service/example-service.ts", (s) => `${s}// B's example change\n`);
  edit("src/main.ts", (s) => `${s}// B wires something new\n`);
  edit("proto/example/v1/example.proto", (s) => `${s}// B's proto comment\n`);
  edit("test/example-service.test.ts", (s) => `${s}// B's test change\n`);
  write(t, "package.json", json({
    name: "example",
    version: "0.1.0",
    scripts: { generate: "buf generate proto/example", test: "node --test --test-concurrency=1", lint: "biome check --write", fmt: "biome format" },
    dependencies: { "@grpc/grpc-js": "1.14.8", fastify: "5.7.0", pino: "9.0.0", "prom-client": "15.1.3" },
  }));
  edit("package-lock.json", (s) => s.replace('"version": "1.0.0"', '"version": "1.1.0"'));
  return t;
}

/** `npm pack`-shaped tarball of a create-grpc-svc package with this template. */
function tarball(root: string, template: string, pkgVersion: string): string {
  const stage = path.join(root, `stage-${pkgVersion}`);
  fs.cpSync(template, path.join(stage, "package/template"), { recursive: true });
  write(stage, "package/package.json", json({ name: "create-grpc-svc", version: pkgVersion }));
  const file = path.join(root, `create-grpc-svc-${pkgVersion}.tgz`);
  const r = spawnSync("tar", ["-czf", file, "-C", stage, "package"], { encoding: "utf8" });
  assert.equal(r.status, 0, r.stderr);
  return file;
}

interface Fixture {
  root: string;
  repo: string;
  a: string;
  b: string;
  baseTgz: string;
}

/** Generates `orders-svc` from A with the real CLI (git on), then makes the user's edits and commits them. */
function fixture(): Fixture {
  const root = tmpDir("cgs-update-");
  const a = templateA(path.join(root, "a"));
  const b = templateB(root, a);
  const repo = path.join(root, "orders-svc");
  const r = runCli([repo, "--yes", "--no-install", "--admin-port", "9100"], { template: a, env: gitEnv(root) });
  assert.equal(r.status, 0, r.stderr);
  const edit = (rel: string, fn: (s: string) => string) => write(repo, rel, fn(fs.readFileSync(path.join(repo, rel), "utf8")));
  edit("src/framework/merged.ts", (s) => s.replace("// merged line 2\n", "// merged line 2 (edited by the team)\n"));
  edit("src/framework/overlap.ts", (s) => s.replace("// overlap line 3\n", "// overlap line 3 as the team has it\n"));
  edit("src/framework/gone-edited.ts", (s) => `${s}// the team's edit\n`);
  edit("src/service/orders-service.ts", (s) => `${s}// the team's handler\n`);
  write(repo, "src/service/extra.ts", "// a file only the team has\n");
  edit("proto/orders/v1/orders.proto", (s) => `${s}// B's proto comment\n`); // already what B has: no diff to show
  edit("package.json", (s) => {
    const pkg = JSON.parse(s);
    pkg.scripts.lint = "biome check --error-on-warnings"; // B changes it too → conflict
    pkg.scripts.mine = "echo mine";
    pkg.dependencies.zod = "4.0.0";
    return json(pkg);
  });
  git(repo, root, "add", "-A");
  git(repo, root, "commit", "-q", "-m", "team edits");
  return { root, repo, a, b, baseTgz: tarball(root, a, version) };
}

const read = (dir: string, rel: string) => fs.readFileSync(path.join(dir, rel), "utf8");

function update(f: Fixture, ...args: string[]) {
  return runCli(["update", ...args], { cwd: f.repo, template: f.b, env: gitEnv(f.root) });
}

/** Exit 2 (or `code`), exactly one stderr line with our prefix. */
function assertOneLineError(r: ReturnType<typeof runCli>, re: RegExp, code = 2): void {
  assert.equal(r.status, code, `stdout: ${r.stdout}\nstderr: ${r.stderr}`);
  const errLines = r.stderr.split("\n").filter((l) => l !== "" && !l.startsWith("npm warn"));
  assert.equal(errLines.length, 1, r.stderr);
  assert.match(errLines[0] as string, /^create-grpc-svc: /);
  assert.match(errLines[0] as string, re);
}

describe("the generation record", () => {
  it("records the version and the chosen options, and no secret", () => {
    const root = tmpDir();
    const repo = path.join(root, "pay-svc");
    const r = runCli([repo, "--yes", "--no-install", "--no-git", "--auth", "both", "--admin-port", "9095", "--unix-socket", "--no-sse"], {
      template: makeSyntheticTemplate(root),
    });
    assert.equal(r.status, 0, r.stderr);
    const text = read(repo, RECORD_FILE);
    assert.deepEqual(parseRecord(text), {
      version,
      options: { name: "pay-svc", auth: "both", adminPort: 9095, unixSocket: true, sse: false },
    });
    const env = read(repo, ".env");
    for (const secret of env.match(/^(?:JWT_SECRET|API_KEYS)=(.+)$/gm) ?? []) {
      assert.ok(!text.includes(secret.split("=")[1] as string), "a secret reached the record");
    }
    assert.doesNotMatch(text, /SECRET|API_KEYS|install|git/);
  });

  it("rejects records that would make update fetch something else or render other names", () => {
    const ok = { version: "1.2.3", options: { name: "a-svc", auth: "none", adminPort: null, unixSocket: false, sse: true } };
    assert.equal(parseRecord(JSON.stringify(ok)).version, "1.2.3");
    for (const [bad, re] of [
      [{ ...ok, version: "github:evil/repo" }, /version/],
      [{ ...ok, version: "latest" }, /version/],
      [{ ...ok, version: "file:../x.tgz" }, /version/],
      [{ ...ok, options: { ...ok.options, name: "../../etc" } }, /options\.name/],
      [{ ...ok, options: { ...ok.options, auth: "root" } }, /options\.auth/],
      [{ ...ok, options: { ...ok.options, adminPort: 9090 } }, /options\.adminPort/],
      [{ ...ok, options: { ...ok.options, sse: "yes" } }, /options\.sse/],
    ] as const) {
      assert.throws(() => parseRecord(JSON.stringify(bad)), re);
    }
    assert.throws(() => parseRecord("{"), /not JSON/);
  });
});

describe("what counts as yours", () => {
  it("keeps the service's files and the vendored-proto split, by rule", () => {
    for (const p of [
      "src/main.ts",
      "src/service/example-service.ts",
      "src/service/workers/cleanup.ts",
      "proto/example/v1/example.proto",
      "proto/other/v1/other.proto",
      "test/example-service.test.ts",
      ".env",
    ]) {
      assert.ok(isYours(p), `${p} is yours`);
    }
    for (const p of [
      "src/framework/call/call.ts",
      "src/framework/server/grpc-server.ts",
      "test/framework/auth.test.ts",
      "test/system/promtool.test.ts",
      "test/proto/gatewaytest/v1/library.proto",
      // The framework suite's own service: update keeps it in step with the framework tests that use it.
      "test/proto/fixture/v1/fixture.proto",
      "test/framework/fixtures/fixture-service.ts",
      "test/framework/fixtures/fixture-main.ts",
      "proto/google/api/http.proto",
      "proto/buf/validate/validate.proto",
      "proto/grpc/health/v1/health.proto",
      "proto/grpcsvc/v1/options.proto",
      "Makefile",
      "Dockerfile",
      "deploy/k8s/deployment.yaml",
      "scripts/token.ts",
      "plopfile.ts",
      "tsconfig.json",
      "biome.json",
      "buf.gen.yaml",
      "README.md",
      ".env.example",
      "package.json",
    ]) {
      assert.ok(!isYours(p), `${p} is framework`);
    }
  });
});

describe("package.json, key by key", () => {
  const base = json({ name: "x", scripts: { test: "a", lint: "l" }, dependencies: { a: "1.0.0", b: "1.0.0", c: "1.0.0" } });

  it("takes the template's changes to keys the repo left alone and keeps the repo's own", () => {
    const ours = json({ name: "x", scripts: { test: "a", lint: "l", mine: "m" }, dependencies: { a: "1.0.0", b: "2.0.0-mine", c: "1.0.0", z: "1.0.0" } });
    const theirs = json({ name: "x", scripts: { test: "a2", lint: "l" }, dependencies: { a: "1.1.0", b: "1.0.0", d: "1.0.0" } });
    const m = mergePackageJson(ours, base, theirs);
    assert.deepEqual(m.conflicts, []);
    assert.deepEqual(JSON.parse(m.text), {
      name: "x",
      scripts: { test: "a2", lint: "l", mine: "m" },
      dependencies: { a: "1.1.0", b: "2.0.0-mine", d: "1.0.0", z: "1.0.0" }, // c removed by the template, d added, sorted
    });
    assert.deepEqual(m.changed.sort(), ["dependencies.a", "dependencies.c", "dependencies.d", "scripts.test"]);
  });

  it("lists a key both sides changed differently and keeps the repo's value, as valid JSON", () => {
    const ours = json({ name: "x", scripts: { test: "a", lint: "l" }, dependencies: { a: "1.0.1", b: "1.0.0", c: "1.0.0" } });
    const theirs = json({ name: "x", scripts: { test: "a", lint: "l" }, dependencies: { a: "1.1.0", b: "1.0.0", c: "1.0.0" } });
    const m = mergePackageJson(ours, base, theirs);
    assert.deepEqual(m.conflicts, [{ key: "dependencies.a", ours: "1.0.1", base: "1.0.0", theirs: "1.1.0" }]);
    assert.equal(JSON.parse(m.text).dependencies.a, "1.0.1");
  });

  it("treats the same change on both sides, or a key the repo deleted and the template left alone, as no conflict", () => {
    const ours = json({ name: "x", scripts: { test: "a" }, dependencies: { a: "1.1.0", b: "1.0.0", c: "1.0.0" } });
    const theirs = json({ name: "x", scripts: { test: "a", lint: "l" }, dependencies: { a: "1.1.0", b: "1.0.0", c: "1.0.0" } });
    const m = mergePackageJson(ours, base, theirs);
    assert.deepEqual(m.conflicts, []);
    assert.equal(m.text, ours, "nothing to change: the file is left byte for byte");
  });
});

describe("update from template A to template B", () => {
  let f: Fixture;
  let r: ReturnType<typeof runCli>;
  let head: string;
  let env: string;

  before(() => {
    f = fixture();
    head = git(f.repo, f.root, "rev-parse", "HEAD");
    env = read(f.repo, ".env");
  });

  it("--dry-run reports the conflicts and the exit code, and writes nothing", () => {
    const before = fs.readFileSync(path.join(f.repo, "src/framework/untouched.ts"));
    const dry = update(f, "--dry-run", "--base", f.baseTgz);
    assert.equal(dry.status, 1, dry.stderr);
    assert.match(dry.stdout, /^Dry run: /);
    assert.match(dry.stdout, /updated\s+src\/framework\/untouched\.ts/);
    assert.match(dry.stdout, /CONFLICT\s+src\/framework\/overlap\.ts/);
    assert.match(dry.stdout, /Nothing was written/);
    assert.equal(git(f.repo, f.root, "status", "--porcelain"), "");
    assert.deepEqual(fs.readFileSync(path.join(f.repo, "src/framework/untouched.ts")), before);
  });

  it("runs: exit 1 because of the conflicts", () => {
    r = update(f, "--base", f.baseTgz);
    assert.equal(r.status, 1, `${r.stdout}\n${r.stderr}`);
    assert.equal(r.stderr, "");
    assert.equal(git(f.repo, f.root, "rev-parse", "HEAD"), head, "update never commits");
  });

  it("updates a framework file the team never touched", () => {
    assert.equal(read(f.repo, "src/framework/untouched.ts"), read(f.b, "src/framework/untouched.ts"));
    assert.match(r.stdout, /updated\s+src\/framework\/untouched\.ts/);
  });

  it("merges a framework file both sides edited apart, keeping both edits", () => {
    const merged = read(f.repo, "src/framework/merged.ts");
    assert.match(merged, /merged line 2 \(edited by the team\)/);
    assert.match(merged, /merged line 18 \(fixed in B\)/);
    assert.doesNotMatch(merged, /<<<<<<<|>>>>>>>/);
    assert.match(r.stdout, /merged\s+src\/framework\/merged\.ts/);
  });

  it("marks an overlapping edit with conflict markers and lists it", () => {
    const text = read(f.repo, "src/framework/overlap.ts");
    assert.match(text, /^<<<<<<< yours\n\/\/ overlap line 3 as the team has it\n=======\n\/\/ overlap line 3 as B has it\n>>>>>>> create-grpc-svc@/m);
    assert.match(r.stdout, /CONFLICT\s+src\/framework\/overlap\.ts\s+\(1 conflict marked\)/);
    assert.match(r.stdout, /`git diff --check` lists the markers left/);
  });

  it("adds new framework files, deletes removed unchanged ones and keeps removed ones the team changed", () => {
    assert.equal(read(f.repo, "src/framework/new.ts"), "// new in B\n");
    assert.ok(!fs.existsSync(path.join(f.repo, "src/framework/gone.ts")));
    assert.match(read(f.repo, "src/framework/gone-edited.ts"), /the team's edit/);
    assert.match(r.stdout, /added\s+src\/framework\/new\.ts/);
    assert.match(r.stdout, /removed\s+src\/framework\/gone\.ts/);
    assert.match(r.stdout, /kept\s+src\/framework\/gone-edited\.ts\s+\(removed from the template, but you changed it: kept\)/);
  });

  it("removes plopfile.js and plop/ (folders left empty too) and adds generators/", () => {
    assert.match(r.stdout, /removed\s+plop\/templates\/service\.ts\.hbs/);
    assert.match(r.stdout, /removed\s+plopfile\.js/);
    assert.ok(!fs.existsSync(path.join(f.repo, "plopfile.js")) && !fs.existsSync(path.join(f.repo, "plop")), "plop/ is gone, not left empty");
    assert.equal(read(f.repo, "generators/cli.ts"), "// new in B\n");
    assert.ok(fs.existsSync(path.join(f.repo, "src/framework")), "a folder that still holds files stays");
  });

  it("never writes the team's files: service, main.ts, proto, the service's test, their own files, .env", () => {
    const committed = (rel: string) => git(f.repo, f.root, "show", `HEAD:${rel}`);
    for (const rel of ["src/service/orders-service.ts", "src/main.ts", "proto/orders/v1/orders.proto", "test/orders-service.test.ts", "src/service/extra.ts"]) {
      assert.equal(read(f.repo, rel).trimEnd(), committed(rel), `${rel} unchanged`);
    }
    assert.doesNotMatch(read(f.repo, "src/service/orders-service.ts"), /B's example change/);
    assert.equal(read(f.repo, ".env"), env);
    // ...but says what the template changed in them, as a diff with repo paths.
    assert.match(r.stdout, /kept\s+src\/main\.ts\s+\(yours, not touched; the template changed it/);
    assert.match(r.stdout, /--- a\/src\/main\.ts\n\+\+\+ b\/src\/main\.ts\n[\s\S]*\+\/\/ B wires something new/);
    assert.doesNotMatch(r.stdout, /orders\.proto/, "a file of yours that already has the new content is not shown");
  });

  it("merges package.json key by key and lists the key both sides changed", () => {
    const pkg = JSON.parse(read(f.repo, "package.json"));
    assert.equal(pkg.name, "orders-svc");
    assert.deepEqual(pkg.dependencies, { "@grpc/grpc-js": "1.14.8", fastify: "5.7.0", pino: "9.0.0", "prom-client": "15.1.3", zod: "4.0.0" });
    assert.equal(pkg.scripts.test, "node --test --test-concurrency=1");
    assert.equal(pkg.scripts.fmt, "biome format");
    assert.equal(pkg.scripts.mine, "echo mine");
    assert.equal(pkg.scripts.lint, "biome check --error-on-warnings", "the team's value stays");
    assert.match(r.stdout, /CONFLICT\s+package\.json[^\n]*\n\s+scripts\.lint: yours "biome check --error-on-warnings", new template "biome check --write", old template "biome check"/);
  });

  it("replaces the lockfile the team never touched, records the new version and names the next commands", () => {
    assert.match(read(f.repo, "package-lock.json"), /"version": "1.1.0"/);
    assert.equal(parseRecord(read(f.repo, RECORD_FILE)).options.adminPort, 9100);
    assert.match(r.stdout, /npm install\n {2}make generate\n {2}make test test-framework\n/);
  });
});

/**
 * A minimal npm registry in a child process (the CLI runs synchronously, so the server cannot live in this one):
 * the packument of create-grpc-svc with one version, and that version's tarball. Real `npm pack` fetches from it.
 */
function startRegistry(root: string, pkgVersion: string, tgz: string): Promise<{ url: string; requests: () => string[]; stop: () => void }> {
  const log = path.join(root, "registry-requests.log");
  const server = `
    const http = require("node:http"), fs = require("node:fs"), crypto = require("node:crypto");
    const [tgz, version, log] = process.argv.slice(1);
    const bytes = fs.readFileSync(tgz);
    const srv = http.createServer((req, res) => {
      fs.appendFileSync(log, req.method + " " + req.url + "\\n");
      const base = "http://127.0.0.1:" + srv.address().port;
      if (req.url === "/create-grpc-svc") {
        const dist = {
          tarball: base + "/create-grpc-svc/-/create-grpc-svc-" + version + ".tgz",
          shasum: crypto.createHash("sha1").update(bytes).digest("hex"),
          integrity: "sha512-" + crypto.createHash("sha512").update(bytes).digest("base64"),
        };
        res.setHeader("content-type", "application/json");
        res.end(JSON.stringify({ name: "create-grpc-svc", "dist-tags": { latest: version }, versions: { [version]: { name: "create-grpc-svc", version, dist } } }));
      } else if (req.url === "/create-grpc-svc/-/create-grpc-svc-" + version + ".tgz") {
        res.setHeader("content-type", "application/octet-stream");
        res.end(bytes);
      } else {
        res.statusCode = 404;
        res.end("{}");
      }
    });
    srv.listen(0, "127.0.0.1", () => process.stdout.write(srv.address().port + "\\n"));
  `;
  const child = spawn(process.execPath, ["-e", server, tgz, pkgVersion, log], { stdio: ["ignore", "pipe", "inherit"] });
  return new Promise((resolve, reject) => {
    child.once("error", reject);
    child.stdout.once("data", (d: Buffer) =>
      resolve({
        url: `http://127.0.0.1:${String(d).trim()}/`,
        requests: () => (fs.existsSync(log) ? fs.readFileSync(log, "utf8").split("\n").filter(Boolean) : []),
        stop: () => child.kill(),
      }),
    );
  });
}

describe("update without --base fetches the recorded version from the npm registry", () => {
  it("packs it with npm from the configured registry and merges as with --base", async (t) => {
    const f = fixture();
    const recorded = "0.0.1-registry";
    const rec = JSON.parse(read(f.repo, RECORD_FILE));
    rec.version = recorded;
    write(f.repo, RECORD_FILE, json(rec));
    git(f.repo, f.root, "commit", "-qam", "generated by an earlier version");
    const registry = await startRegistry(f.root, recorded, tarball(f.root, f.a, recorded));
    t.after(registry.stop);

    const npmEnv = {
      npm_config_registry: registry.url,
      npm_config_cache: path.join(f.root, "npm-cache"),
      npm_config_offline: "false",
      npm_config_update_notifier: "false",
    };
    const r = runCli(["update"], { cwd: f.repo, template: f.b, env: { ...gitEnv(f.root), ...npmEnv } });
    assert.equal(r.status, 1, `exit 1 for the conflicts, as with --base:\n${r.stdout}\n${r.stderr}`);
    assert.match(r.stdout, new RegExp(`create-grpc-svc@${recorded.replaceAll(".", "\\.")} from the npm registry`));
    assert.match(r.stdout, /updated\s+src\/framework\/untouched\.ts/);
    assert.equal(read(f.repo, "src/framework/untouched.ts"), read(f.b, "src/framework/untouched.ts"));
    assert.match(read(f.repo, "src/framework/merged.ts"), /merged line 2 \(edited by the team\)/);
    const asked = registry.requests();
    assert.ok(asked.includes("GET /create-grpc-svc"), `npm asked this registry for the packument: ${asked}`);
    assert.ok(asked.includes(`GET /create-grpc-svc/-/create-grpc-svc-${recorded}.tgz`), `and for the tarball: ${asked}`);
    assert.equal(JSON.parse(read(f.repo, RECORD_FILE)).version, version, "the record moves to this version");
  });
});

describe("update --help", () => {
  it("prints the update usage and exits 0, also outside a generated repo", () => {
    const r = runCli(["update", "--help"], { cwd: tmpDir() });
    assert.equal(r.status, 0, r.stderr);
    for (const flag of ["--dry-run", "--force", "--base <tarball>"]) assert.ok(r.stdout.includes(flag), flag);
    assert.match(r.stdout, /never written/);
  });
});

describe("a repo already on this version", () => {
  it("says so, exits 0 and fetches and writes nothing", () => {
    const f = fixture();
    // No --base and an offline, empty npm cache: any fetch would fail the run.
    const npmEnv = { npm_config_offline: "true", npm_config_cache: path.join(f.root, "npm-cache") };
    const r = runCli(["update"], { cwd: f.repo, template: f.b, env: { ...gitEnv(f.root), ...npmEnv } });
    assert.equal(r.status, 0, r.stderr);
    assert.equal(r.stdout, `This repo is already on create-grpc-svc ${version}; nothing to update.\n`);
    assert.equal(git(f.repo, f.root, "status", "--porcelain"), "");
  });
});

describe("bad input: one line, nothing written", () => {
  it("refuses a dirty working tree without --force, and goes on with it", () => {
    const f = fixture();
    write(f.repo, "src/framework/untouched.ts", "// uncommitted\n");
    const r = update(f, "--base", f.baseTgz);
    assertOneLineError(r, /uncommitted change.*src\/framework\/untouched\.ts.*commit or stash first, or pass --force/);
    assert.equal(r.stdout, "");
    assert.ok(!fs.existsSync(path.join(f.repo, "src/framework/new.ts")));
    // A dry run writes nothing: it runs on the dirty tree, and leaves it as it was.
    const dry = update(f, "--dry-run", "--base", f.baseTgz);
    assert.equal(dry.status, 1, dry.stderr);
    assert.match(dry.stdout, /Nothing was written \(--dry-run\)/);
    assert.match(dry.stdout, /run update without --dry-run, then npm install, make generate, make test test-framework\.$/m);
    assert.equal(read(f.repo, "src/framework/untouched.ts"), "// uncommitted\n");
    assert.ok(!fs.existsSync(path.join(f.repo, "src/framework/new.ts")));
    const forced = update(f, "--force", "--base", f.baseTgz);
    assert.equal(forced.status, 1, forced.stderr);
    assert.ok(fs.existsSync(path.join(f.repo, "src/framework/new.ts")));
  });

  it("refuses outside a generated repo with exit 2", () => {
    const dir = tmpDir();
    const r = runCli(["update"], { cwd: dir });
    assertOneLineError(r, /not inside a repository generated by create-grpc-svc: no \.create-grpc-svc\.json/);
  });

  it("refuses a --base tarball of another version than the recorded one", () => {
    const f = fixture();
    const other = tarball(path.join(f.root, "other"), f.a, "9.9.9");
    assertOneLineError(update(f, "--base", other), /is create-grpc-svc 9\.9\.9, but this repo was generated with/);
    assertOneLineError(update(f, "--base", path.join(f.root, "missing.tgz")), /no such file/);
    assert.equal(git(f.repo, f.root, "status", "--porcelain"), "");
  });

  it("says the recorded version cannot be fetched, exits 1 and writes nothing", () => {
    const f = fixture();
    const rec = JSON.parse(read(f.repo, RECORD_FILE));
    rec.version = "0.0.1-unpublished";
    write(f.repo, RECORD_FILE, json(rec));
    git(f.repo, f.root, "commit", "-qam", "pretend an older version");
    // An empty cache and offline mode: npm pack fails at once instead of asking a registry.
    const npmEnv = { npm_config_offline: "true", npm_config_cache: path.join(f.root, "npm-cache"), npm_config_registry: "http://127.0.0.1:9/" };
    const r = runCli(["update"], { cwd: f.repo, template: f.b, env: { ...gitEnv(f.root), ...npmEnv } });
    assertOneLineError(r, /cannot fetch create-grpc-svc@0\.0\.1-unpublished from the npm registry .*nothing was written.*--base/, 1);
    assert.equal(git(f.repo, f.root, "status", "--porcelain"), "");
  });

  it("refuses to write through a symlinked directory that leads out of the repo", () => {
    const f = fixture();
    const outside = path.join(f.root, "outside-framework");
    fs.renameSync(path.join(f.repo, "src/framework"), outside);
    fs.symlinkSync(outside, path.join(f.repo, "src/framework"));
    git(f.repo, f.root, "add", "-A");
    git(f.repo, f.root, "commit", "-qm", "framework elsewhere");
    const before = read(outside, "untouched.ts");
    const r = update(f, "--base", f.baseTgz);
    assertOneLineError(r, /src\/framework\/\S+ would be written outside the repository .*nothing was written/);
    assert.equal(read(outside, "untouched.ts"), before);
    assert.ok(!fs.existsSync(path.join(outside, "new.ts")));
    assert.equal(git(f.repo, f.root, "status", "--porcelain"), "");
  });

  it("refuses a --base tarball that holds a symlink", () => {
    const f = fixture();
    const stage = path.join(f.root, "evil");
    fs.cpSync(path.join(f.root, `stage-${version}`), stage, { recursive: true });
    fs.symlinkSync("/etc", path.join(stage, "package/template/escape"));
    const evil = path.join(f.root, "evil.tgz");
    assert.equal(spawnSync("tar", ["-czf", evil, "-C", stage, "package"]).status, 0);
    assertOneLineError(update(f, "--base", evil), /holds a link or special file, which no npm tarball has: .*escape -> \/etc/);
  });

  it("refuses to take a repo back to an older version", () => {
    const f = fixture();
    const rec = JSON.parse(read(f.repo, RECORD_FILE));
    rec.version = "999.0.0";
    write(f.repo, RECORD_FILE, json(rec));
    git(f.repo, f.root, "commit", "-qam", "pretend a newer version");
    assertOneLineError(update(f), /this repo is on create-grpc-svc 999\.0\.0, newer than this one/);
  });

  it("orders versions by semver precedence", () => {
    const sorted = ["0.9.0", "1.0.0-alpha", "1.0.0-alpha.1", "1.0.0-alpha.beta", "1.0.0-beta.2", "1.0.0-beta.11", "1.0.0-rc.1", "1.0.0", "1.0.1", "1.10.0", "10.0.0"];
    for (let i = 1; i < sorted.length; i++) {
      assert.ok(compareVersions(sorted[i - 1] as string, sorted[i] as string) < 0, `${sorted[i - 1]} < ${sorted[i]}`);
      assert.ok(compareVersions(sorted[i] as string, sorted[i - 1] as string) > 0, `${sorted[i]} > ${sorted[i - 1]}`);
    }
    assert.equal(compareVersions("1.2.3+build.1", "1.2.3"), 0);
  });

  it("rejects unknown update options with exit 2", () => {
    assertOneLineError(runCli(["update", "--bogus"]), /unknown option --bogus \(see update --help\)/);
  });
});
