/**
 * `make breaking` and `make lint` in a scratch git repository holding this Makefile, buf.yaml, scripts/breaking.sh
 * and proto/: buf breaking against where the branch left main, offline; skipped with one line without that history;
 * BREAKING=off accepts a breaking change.
 */
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { cpSync, mkdirSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { after, before, describe, test } from "node:test";
import { fileURLToPath } from "node:url";

const TEMPLATE = join(dirname(fileURLToPath(import.meta.url)), "..", "..");
// The framework's fixture proto stands in for the repo's own (the suite never touches yours): moved from test/proto
// into proto/, where make breaking looks.
const PROTO = "proto/fixture/v1/fixture.proto";
const VENDORED = ["google", "buf", "grpc", "grpcsvc"];

function run(cwd: string, cmd: string, args: string[], env: Record<string, string> = {}) {
  // The scratch repo's make is a top-level one even when this suite runs under make (as in CI): a make level
  // inherited from the environment would print "make[N]: Entering directory" around the line the tests read.
  const { MAKELEVEL: _level, MFLAGS: _flags, ...parent } = process.env;
  const r = spawnSync(cmd, args, {
    cwd,
    encoding: "utf8",
    env: {
      ...parent,
      GIT_AUTHOR_NAME: "t",
      GIT_AUTHOR_EMAIL: "t@example.com",
      GIT_COMMITTER_NAME: "t",
      GIT_COMMITTER_EMAIL: "t@example.com",
      MAKEFLAGS: "",
      ...env,
    },
  });
  return { status: r.status, out: `${r.stdout}${r.stderr}` };
}

/** A repository with the template's Makefile and protos, its generated code marked fresh (lint's npm script a no-op). */
function scratchRepo(): string {
  const dir = mkdtempSync(join(tmpdir(), "breaking-"));
  for (const f of ["Makefile", "buf.yaml", "buf.gen.yaml", "test/buf.gen.yaml", "scripts/breaking.sh"]) {
    mkdirSync(dirname(join(dir, f)), { recursive: true });
    cpSync(join(TEMPLATE, f), join(dir, f));
  }
  for (const v of VENDORED) cpSync(join(TEMPLATE, "proto", v), join(dir, "proto", v), { recursive: true });
  cpSync(join(TEMPLATE, "test", "proto"), join(dir, "test", "proto"), {
    recursive: true,
    filter: (src) => !src.startsWith(join(TEMPLATE, "test", "proto", "fixture")),
  });
  cpSync(join(TEMPLATE, "test", "proto", "fixture"), join(dir, "proto", "fixture"), { recursive: true });
  symlinkSync(join(TEMPLATE, "node_modules"), join(dir, "node_modules"));
  writeFileSync(join(dir, "package.json"), JSON.stringify({ name: "scratch", version: "0.0.0", scripts: { lint: "true" } }));
  writeFileSync(join(dir, ".gitignore"), "node_modules\nsrc/gen/\n");
  markGenerated(dir);
  return dir;
}

function markGenerated(dir: string) {
  const protos = run(dir, "find", ["proto", "test/proto", "-name", "*.proto"]).out.trim().split("\n").sort();
  mkdirSync(join(dir, "src", "gen"), { recursive: true });
  writeFileSync(join(dir, "src", "gen", ".protos"), protos.join(" "));
  writeFileSync(join(dir, "src", "gen", ".stamp"), "");
}

function git(dir: string, ...args: string[]) {
  const r = run(dir, "git", args);
  assert.equal(r.status, 0, r.out);
  return r.out;
}

function edit(dir: string, from: string | RegExp, to: string) {
  const file = join(dir, PROTO);
  const text = readFileSync(file, "utf8");
  assert.ok(text.match(from), `${from} in ${PROTO}`);
  writeFileSync(file, text.replace(from, to));
  markGenerated(dir);
}

describe("make breaking", () => {
  const dirs: string[] = [];
  const repo = () => {
    const d = scratchRepo();
    dirs.push(d);
    return d;
  };
  after(() => {
    for (const d of dirs) rmSync(d, { recursive: true, force: true });
  });

  test("without git history, or without a main branch, it is skipped with one line", () => {
    const dir = repo();
    const none = run(dir, "make", ["breaking"]);
    assert.equal(none.status, 0, none.out);
    assert.equal(none.out.trim(), "make breaking: skipped, no git history to compare proto/ with yet");
    git(dir, "init", "-q", "-b", "trunk");
    git(dir, "add", ".");
    git(dir, "commit", "-q", "-m", "first");
    const noMain = run(dir, "make", ["breaking"]);
    assert.equal(noMain.status, 0, noMain.out);
    assert.match(noMain.out.trim(), /^make breaking: skipped, no main branch to compare proto\/ with yet/);
  });

  describe("in a repository with main", () => {
    let dir: string;
    before(() => {
      dir = repo();
      git(dir, "init", "-q", "-b", "main");
      git(dir, "add", ".");
      git(dir, "commit", "-q", "-m", "first");
    });

    test("removing a field fails make breaking and make lint with buf's message; BREAKING=off accepts it", () => {
      assert.equal(run(dir, "make", ["breaking"]).status, 0);
      git(dir, "checkout", "-q", "-b", "feature");
      edit(dir, /\n\s*bool debug = 3;/, "");
      for (const target of ["breaking", "lint"]) {
        const r = run(dir, "make", [target]);
        assert.notEqual(r.status, 0, `make ${target} passed:\n${r.out}`);
        assert.match(r.out, /Previously present field "3" with name "debug" on message "EchoRequest" was deleted\./);
      }
      // Uncommitted on main too: main is compared with its own HEAD.
      const accepted = run(dir, "make", ["lint", "BREAKING=off"]);
      assert.equal(accepted.status, 0, accepted.out);
      assert.match(accepted.out, /make breaking: off \(BREAKING=off\)/);
      git(dir, "commit", "-q", "-am", "drop debug");
      assert.notEqual(run(dir, "make", ["lint"]).status, 0, "still breaking once committed on the branch");
      git(dir, "checkout", "-q", "main");
      markGenerated(dir);
    });

    test("a field main added after the branch left it does not count against the branch (merge-base)", () => {
      git(dir, "checkout", "-q", "-b", "older");
      git(dir, "checkout", "-q", "main");
      edit(dir, /bool debug = 3;/, "bool debug = 3;\n  string added = 15;");
      git(dir, "commit", "-q", "-am", "add a field on main");
      git(dir, "checkout", "-q", "older");
      markGenerated(dir);
      const r = run(dir, "make", ["breaking"]);
      assert.equal(r.status, 0, r.out);
      assert.match(r.out, /make breaking: no breaking change against main/);
      // On main, an uncommitted removal is caught.
      git(dir, "checkout", "-q", "main");
      edit(dir, /\n\s*string added = 15;/, "");
      const onMain = run(dir, "make", ["breaking"]);
      assert.notEqual(onMain.status, 0, onMain.out);
      assert.match(onMain.out, /Previously present field "15" with name "added"/);
    });
  });
});
