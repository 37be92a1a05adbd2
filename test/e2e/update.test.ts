// `create-grpc-svc update` end to end, as a team meets it: version A of the scaffolder (this checkout,
// packed) generates shop-svc; the team edits a framework file and their service and commits; version B
// (A's tarball with template changes and a new version, packed again) runs `update --base A.tgz` through
// `npm exec`, the way `npm create grpc-svc@latest -- update` runs it. Then the team resolves the conflict,
// installs and runs `make test`. One npm install and the service's own tests: a couple of minutes.
//
// E2E_KEEP=1 keeps the temp directory for inspection.
import assert from "node:assert/strict";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { after, before, describe, test } from "node:test";
import { assertOk, MINUTE, ROOT, type Result, run } from "./support.js";

const B_VERSION = "99.0.0-e2e";
// The test's own commits; the scaffolder's initial commit uses its fallback identity.
const GIT_ENV = { GIT_AUTHOR_NAME: "team", GIT_AUTHOR_EMAIL: "team@localhost", GIT_COMMITTER_NAME: "team", GIT_COMMITTER_EMAIL: "team@localhost" };

let work = "";
let tgzA = "";
let tgzB = "";
let versionA = "";
let repo = "";

const read = (rel: string) => fs.readFileSync(path.join(repo, rel), "utf8");
const write = (dir: string, rel: string, text: string) => fs.writeFileSync(path.join(dir, rel), text);
const append = (dir: string, rel: string, text: string) => fs.appendFileSync(path.join(dir, rel), text);
const prepend = (dir: string, rel: string, text: string) => write(dir, rel, text + fs.readFileSync(path.join(dir, rel), "utf8"));
const git = (...args: string[]) => run("git", args, repo, MINUTE, GIT_ENV);
const update = (...args: string[]) =>
  run("npm", ["exec", "--yes", `--package=${tgzB}`, "--", "create-grpc-svc", "update", "--base", tgzA, ...args], repo, 5 * MINUTE);

/** B = A's package with a new version and these template changes (template paths, before renaming). */
async function packVersionB(): Promise<string> {
  const stage = path.join(work, "stage-b");
  fs.mkdirSync(stage);
  assertOk(await run("tar", ["-xzf", tgzA, "-C", stage], work, MINUTE), "extract A");
  const pkgDir = path.join(stage, "package");
  const pkg = JSON.parse(fs.readFileSync(path.join(pkgDir, "package.json"), "utf8"));
  pkg.version = B_VERSION;
  write(pkgDir, "package.json", JSON.stringify(pkg, null, 2));
  const t = path.join(pkgDir, "template");
  append(t, "Makefile", "\n# B: a note at the end of the Makefile\n"); // the team edits its top
  append(t, "src/framework/index.ts", "// B: a framework fix the team never touched\n");
  append(t, "Dockerfile", "# B: the last line\n"); // the team appends too: overlap
  append(t, "src/service/example-service.ts", "// B: a change to the example service\n"); // yours: never applied
  write(t, "src/framework/added-in-b.ts", "export const addedInB = true;\n");
  const tpkg = JSON.parse(fs.readFileSync(path.join(t, "package.json"), "utf8"));
  tpkg.scripts["hello-b"] = "node -e \"console.log('hello from B')\"";
  // A range that the installed version satisfies, so npm install needs nothing new from the registry.
  tpkg.dependencies.pino = `^${tpkg.dependencies.pino}`;
  write(t, "package.json", `${JSON.stringify(tpkg, null, 2)}\n`);
  const packDir = path.join(work, "pack-b");
  fs.mkdirSync(packDir);
  // dist/ and the protos are already in A's tarball: no prepack.
  assertOk(await run("npm", ["pack", "--ignore-scripts", "--pack-destination", packDir], pkgDir, 2 * MINUTE), "npm pack B");
  return path.join(packDir, `create-grpc-svc-${B_VERSION}.tgz`);
}

before(async () => {
  work = fs.mkdtempSync(path.join(os.tmpdir(), "create-grpc-svc-update-e2e-"));
  const packDir = path.join(work, "pack-a");
  fs.mkdirSync(packDir);
  assertOk(await run("npm", ["pack", "--pack-destination", packDir], ROOT, 5 * MINUTE), "npm pack A"); // prepack: build + protos
  const name = fs.readdirSync(packDir).find((f) => f.endsWith(".tgz"));
  assert.ok(name, "npm pack wrote a .tgz");
  tgzA = path.join(packDir, name);
  versionA = JSON.parse(fs.readFileSync(path.join(ROOT, "package.json"), "utf8")).version;
});

after(() => {
  if (work && !process.env.E2E_KEEP) fs.rmSync(work, { recursive: true, force: true });
  else if (work) console.log(`# kept ${work}`);
});

describe("update a generated repo from version A to version B", () => {
  let dry: Result;
  let r: Result;
  let headBefore = "";

  test("A generates shop-svc with the record committed; the team edits and commits", { timeout: 10 * MINUTE }, async () => {
    const cwd = fs.mkdtempSync(path.join(work, "gen-"));
    const gen = await run("npm", ["exec", "--yes", `--package=${tgzA}`, "--", "create-grpc-svc", "shop-svc", "--yes", "--no-install", "--admin-port", "9095"], cwd, 10 * MINUTE);
    assertOk(gen, "create-grpc-svc shop-svc");
    repo = path.join(cwd, "shop-svc");
    const record = JSON.parse(read(".create-grpc-svc.json"));
    assert.equal(record.version, versionA);
    assert.deepEqual(record.options, { name: "shop-svc", auth: "none", adminPort: 9095, unixSocket: false, sse: true });
    assert.match((await git("ls-files", ".create-grpc-svc.json")).stdout, /\.create-grpc-svc\.json/, "the record is committed");

    prepend(repo, "Makefile", "# team: a note at the top of the Makefile\n");
    append(repo, "Dockerfile", "# team: the last line\n");
    append(repo, "src/service/shop-service.ts", "// team: our handler notes\n");
    const pkg = JSON.parse(read("package.json"));
    pkg.scripts.team = "echo team";
    write(repo, "package.json", `${JSON.stringify(pkg, null, 2)}\n`);
    assertOk(await git("commit", "-qam", "team edits"), "git commit");
    headBefore = (await git("rev-parse", "HEAD")).stdout.trim();
    tgzB = await packVersionB();
  });

  test("--dry-run lists the same changes and conflicts and writes nothing", { timeout: 5 * MINUTE }, async () => {
    dry = await update("--dry-run");
    assert.equal(dry.code, 1, dry.output);
    assert.match(dry.stdout, new RegExp(`^Dry run: create-grpc-svc update ${versionA.replace(/\./g, "\\.")} → ${B_VERSION}`));
    assert.match(dry.stdout, /CONFLICT\s+Dockerfile/);
    assert.match(dry.stdout, /Nothing was written \(--dry-run\)/);
    assert.equal((await git("status", "--porcelain")).stdout, "", "the work tree is untouched");
  });

  test("update exits 1 for the overlap and reports every change", { timeout: 5 * MINUTE }, async () => {
    r = await update();
    assert.equal(r.code, 1, r.output);
    for (const line of [
      /updated\s+src\/framework\/index\.ts/,
      /merged\s+Makefile/,
      /added\s+src\/framework\/added-in-b\.ts/,
      /merged\s+package\.json\s+\(dependencies\.pino, scripts\.hello-b\)/,
      /CONFLICT\s+Dockerfile\s+\(1 conflict marked\)/,
      /kept\s+src\/service\/shop-service\.ts\s+\(yours, not touched/,
      /npm install\n {2}make generate\n {2}make test/,
    ]) {
      assert.match(r.stdout, line);
    }
    // The dry run said the same, line for line, apart from its own header and footer.
    const body = (s: string) => s.split("\n").filter((l) => /^ {2}\S/.test(l) && !/^ {2}(npm|make) /.test(l));
    assert.deepEqual(body(dry.stdout), body(r.stdout));
    assert.equal((await git("rev-parse", "HEAD")).stdout.trim(), headBefore, "update leaves committing to the team");
  });

  test("the untouched framework file is updated, both edits survive the merge, the service file is untouched", () => {
    assert.match(read("src/framework/index.ts"), /\/\/ B: a framework fix the team never touched\n$/);
    const makefile = read("Makefile");
    assert.match(makefile, /^# team: a note at the top of the Makefile\n/);
    assert.match(makefile, /# B: a note at the end of the Makefile\n$/);
    assert.equal(read("src/framework/added-in-b.ts"), "export const addedInB = true;\n");
    const service = read("src/service/shop-service.ts");
    assert.match(service, /\/\/ team: our handler notes\n$/);
    assert.doesNotMatch(service, /B: a change/);
    const pkg = JSON.parse(read("package.json"));
    assert.equal(pkg.scripts.team, "echo team");
    assert.equal(pkg.scripts["hello-b"], "node -e \"console.log('hello from B')\"");
    assert.match(pkg.dependencies.pino, /^\^/);
    assert.equal(JSON.parse(read(".create-grpc-svc.json")).version, B_VERSION);
  });

  test("the overlap carries conflict markers; resolved, npm install and make test pass", { timeout: 15 * MINUTE }, async (t) => {
    const unresolved = await git("diff", "--check");
    assert.notEqual(unresolved.code, 0);
    assert.match(unresolved.output, /^Dockerfile:\d+: leftover conflict marker/m);
    const dockerfile = read("Dockerfile");
    const conflict = /<<<<<<< yours\n# team: the last line\n=======\n# B: the last line\n>>>>>>> create-grpc-svc@[^\n]+\n/;
    assert.match(dockerfile, conflict);
    write(repo, "Dockerfile", dockerfile.replace(conflict, "# team: the last line\n# B: the last line\n"));
    // What the README tells the team to run: it names leftover conflict markers (the README itself shows some).
    const check = await git("diff", "--check");
    assert.equal(check.code, 0, `git diff --check: ${check.output}`);

    const install = await run("npm", ["install", "--no-audit", "--no-fund"], repo, 10 * MINUTE);
    assertOk(install, "npm install");
    const test = await run("make", ["test"], repo, 10 * MINUTE);
    assertOk(test, "make test after the update");
    t.diagnostic(`npm install ${install.ms} ms, make test ${test.ms} ms`);
    const hello = await run("npm", ["run", "--silent", "hello-b"], repo, MINUTE);
    assertOk(hello, "npm run hello-b");
    assert.equal(hello.stdout.trim(), "hello from B");
  });
});
