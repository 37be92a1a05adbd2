// Runs the real CLI as a child process (stdin is a pipe, so never a TTY).
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import fs from "node:fs";
import path from "node:path";
import { before, describe, it } from "node:test";
import {
  leftoverExampleTokens,
  listFiles,
  makeCliTemplate,
  parseEnv,
  REPO,
  realTemplateReady,
  runCli,
  tmpDir,
  type Variant,
  write,
} from "./helpers.js";

const QUIET = ["--yes", "--no-install", "--no-git"];
const version = (JSON.parse(fs.readFileSync(path.join(REPO, "package.json"), "utf8")) as { version: string }).version;

let template: string;
before(() => {
  template = makeCliTemplate(tmpDir());
  // The dist variant runs what the published bin runs: the compiled JavaScript. Build (as `npm run build`)
  // only when dist/ is missing or older than a source, so a fresh `make build` output is not rewritten under
  // other test files that may be reading it.
  if (distIsStale()) {
    const build = spawnSync(path.join(REPO, "node_modules/.bin/tsc"), ["-p", "tsconfig.json"], { cwd: REPO, encoding: "utf8" });
    assert.equal(build.status, 0, build.stdout + build.stderr);
  }
});

function distIsStale(): boolean {
  const mtime = (f: string) => fs.statSync(f).mtimeMs;
  const src = path.join(REPO, "generator");
  return fs.readdirSync(src).some((f) => {
    const js = path.join(REPO, "dist/generator", f.replace(/\.ts$/, ".js"));
    return !fs.existsSync(js) || mtime(js) < mtime(path.join(src, f));
  });
}

const read = (dir: string, rel: string) => fs.readFileSync(path.join(dir, rel), "utf8");

/** Exit 2, exactly one stderr line with our prefix, nothing on stdout. */
function assertUsageError(r: ReturnType<typeof runCli>, re: RegExp): void {
  assert.equal(r.status, 2, `stderr: ${r.stderr}`);
  assert.equal(r.stdout, "");
  const lines = r.stderr.split("\n").filter((l) => !l.startsWith("npm warn"));
  assert.equal(lines.length, 2, `one line expected, got: ${r.stderr}`); // the line + the empty string after its \n
  assert.match(lines[0] as string, /^create-grpc-svc: /);
  assert.match(lines[0] as string, re);
}

for (const variant of ["tsx", "dist"] as Variant[]) {
  describe(`scaffolding with --yes --no-install --no-git (${variant})`, () => {
    let out: string;
    let r: ReturnType<typeof runCli>;
    before(() => {
      out = path.join(tmpDir(), "demo-svc");
      r = runCli([out, ...QUIET], { template, variant });
    });

    it("exits 0 with a summary and next steps on stdout, nothing on stderr", () => {
      assert.equal(r.status, 0, r.stderr);
      assert.equal(r.stderr, "");
      assert.match(r.stdout, /Created demo-svc in .*demo-svc \(\d+ files\)/);
      assert.match(r.stdout, /proto\/demo\/v1\/demo\.proto \(package demo\.v1, service DemoService\)/);
      assert.match(r.stdout, /Next steps:\n {2}cd .*demo-svc && npm install && make run/);
      assert.match(r.stdout, /\n {2}make test\n/);
    });

    it("writes the expected files", () => {
      for (const f of ["proto/demo/v1/demo.proto", ".gitignore", ".env", ".env.example", "package.json", "README.md"]) {
        assert.ok(fs.existsSync(path.join(out, f)), `${f} missing`);
      }
      assert.ok(!fs.existsSync(path.join(out, "proto/example")));
      assert.ok(!fs.existsSync(path.join(out, "_gitignore")));
      assert.ok(!fs.existsSync(path.join(out, "node_modules")));
      assert.equal(JSON.parse(read(out, "package.json")).name, "demo-svc");
      assert.match(read(out, "proto/demo/v1/demo.proto"), /package demo\.v1;[\s\S]*service DemoService \{/);
    });

    it("leaves no example token anywhere except .env.example references", () => {
      assert.deepEqual(leftoverExampleTokens(out), []);
    });

    it("uses the defaults: no auth secrets, no admin port, TCP gateway, SSE on", () => {
      const env = parseEnv(read(out, ".env"));
      for (const k of ["JWT_SECRET", "API_KEYS", "ADMIN_PORT", "DISABLE_UNIX_GATEWAY", "DISABLE_SSE_MARSHALER"]) {
        assert.ok(!env.has(k), `${k} should not be set`);
      }
      assert.equal(fs.statSync(path.join(out, ".env")).mode & 0o777, 0o600);
      assert.ok(!read(out, "README.md").includes("create-grpc-svc:choices"));
    });
  });
}

describe("choices written to .env and .env.example", () => {
  const cases: [auth: string, secretKeys: string[], publicKeys: string[]][] = [
    ["none", [], []],
    ["jwt", ["JWT_SECRET"], []],
    ["api-key", ["API_KEYS"], ["HTTP_HEADER_PREFIXES"]],
    ["both", ["JWT_SECRET", "API_KEYS"], ["HTTP_HEADER_PREFIXES"]],
  ];
  for (const [auth, secretKeys, publicKeys] of cases) {
    it(`--auth ${auth} puts ${secretKeys.join(", ") || "no secret"} in .env only`, () => {
      const out = path.join(tmpDir(), "auth-svc");
      const r = runCli([out, ...QUIET, "--auth", auth], { template });
      assert.equal(r.status, 0, r.stderr);
      const env = parseEnv(read(out, ".env"));
      const exampleText = read(out, ".env.example");
      const example = parseEnv(exampleText);
      for (const k of secretKeys) {
        assert.match(env.get(k) ?? "", /^[A-Za-z0-9_-]{43}$/, `${k} in .env`);
        assert.ok(!example.has(k), `${k} must not be set in .env.example`);
        assert.ok(!exampleText.includes(env.get(k) as string), "secret leaked into .env.example");
        assert.ok(!r.stdout.includes(env.get(k) as string), "secret printed");
      }
      for (const k of ["JWT_SECRET", "API_KEYS"].filter((k) => !secretKeys.includes(k))) assert.ok(!env.has(k));
      for (const k of publicKeys) {
        assert.equal(env.get(k), "x-api-key");
        assert.equal(example.get(k), "x-api-key");
      }
      if (secretKeys.length > 1) assert.notEqual(env.get("JWT_SECRET"), env.get("API_KEYS"));
    });
  }

  it("--admin-port, --unix-socket and --no-sse go to both files, each variable once", () => {
    const out = path.join(tmpDir(), "opts-svc");
    const r = runCli([out, ...QUIET, "--admin-port", "9100", "--unix-socket", "--no-sse"], { template });
    assert.equal(r.status, 0, r.stderr);
    for (const file of [".env", ".env.example"]) {
      const text = read(out, file);
      const vars = parseEnv(text);
      assert.equal(vars.get("ADMIN_PORT"), "9100", file);
      assert.equal(vars.get("DISABLE_UNIX_GATEWAY"), "false", file);
      assert.equal(vars.get("DISABLE_SSE_MARSHALER"), "true", file);
      for (const k of ["ADMIN_PORT", "DISABLE_UNIX_GATEWAY", "DISABLE_SSE_MARSHALER"]) {
        assert.equal(text.match(new RegExp(`^\\s*#?\\s*${k}=`, "gm"))?.length, 1, `${k} appears once in ${file}`);
      }
    }
    assert.match(r.stdout, /admin port\s+9100/);
  });
});

describe("names and directories", () => {
  it("without a TTY and without --yes, asks nothing and uses the defaults", () => {
    const out = path.join(tmpDir(), "quiet-svc");
    const r = runCli([out, "--no-install", "--no-git"], { template });
    assert.equal(r.status, 0, r.stderr);
    assert.doesNotMatch(r.stdout, /\?|Service name/);
    assert.match(r.stdout, /auth\s+none\n/);
    assert.match(r.stdout, /gateway\s+TCP loopback\n/);
    assert.match(r.stdout, /SSE\s+on\n/);
  });

  it("takes the name from --name over the directory name", () => {
    const out = path.join(tmpDir(), "some-dir");
    const r = runCli([out, ...QUIET, "--name", "order-book-service"], { template });
    assert.equal(r.status, 0, r.stderr);
    assert.equal(JSON.parse(read(out, "package.json")).name, "order-book-service");
    assert.ok(fs.existsSync(path.join(out, "proto/orderbook/v1/orderbook.proto")));
    assert.match(read(out, "proto/orderbook/v1/orderbook.proto"), /service OrderBookService \{/);
  });

  it("creates ./<name> when only --name is given", () => {
    const cwd = tmpDir();
    const r = runCli(["--name", "named-svc", ...QUIET], { template, cwd });
    assert.equal(r.status, 0, r.stderr);
    assert.ok(fs.existsSync(path.join(cwd, "named-svc/proto/named/v1/named.proto")));
    assert.match(r.stdout, /cd \.\/named-svc && npm install && make run/);
  });

  it("writes into an existing empty directory, named after it ('.')", () => {
    const cwd = path.join(tmpDir(), "dot-svc");
    fs.mkdirSync(cwd);
    const r = runCli([".", ...QUIET], { template, cwd });
    assert.equal(r.status, 0, r.stderr);
    assert.equal(JSON.parse(read(cwd, "package.json")).name, "dot-svc");
    assert.match(r.stdout, /Next steps:\n {2}npm install && make run/);
  });
});

describe("bad input: exit 2, one line, nothing written", () => {
  const cases: [title: string, args: (out: string) => string[], re: RegExp][] = [
    ["an invalid --name", (o) => [o, "--name", "Bad_Name"], /invalid name "Bad_Name"/],
    ["a directory name that is no valid package name", (o) => [path.join(path.dirname(o), "Not Valid"), "--yes"], /taken from the directory name; pass --name/],
    ["a reserved stem", (o) => [o, "--name", "grpc-svc"], /clashes with the vendored proto\/grpc/],
    ["an unknown flag", (o) => [o, "--frobnicate"], /unknown option --frobnicate/],
    ["a bad --auth", (o) => [o, "--auth", "oauth2"], /invalid --auth "oauth2"/],
    ["a non-numeric --admin-port", (o) => [o, "--admin-port", "http"], /invalid --admin-port "http"/],
    ["an out-of-range --admin-port", (o) => [o, "--admin-port", "70000"], /invalid --admin-port 70000/],
    ["an --admin-port the service uses", (o) => [o, "--admin-port", "9091"], /gRPC and HTTP ports/],
    ["no directory and no name", () => ["--yes"], /no target directory given/],
    ["two directories", (o) => [o, `${o}-2`], /one target directory/],
  ];
  for (const [title, args, re] of cases) {
    it(`rejects ${title}`, () => {
      const cwd = tmpDir();
      const out = path.join(cwd, "bad-svc");
      assertUsageError(runCli([...args(out), "--no-install", "--no-git"], { template, cwd }), re);
      assert.deepEqual(fs.readdirSync(cwd), [], "nothing may be written");
    });
  }

  it("rejects a non-empty directory without --force and leaves it unchanged (dist)", () => {
    const out = path.join(tmpDir(), "busy-svc");
    write(out, "notes.txt", "mine\n");
    assertUsageError(runCli([out, ...QUIET], { template, variant: "dist" }), /is not empty \(use --force/);
    assert.deepEqual(fs.readdirSync(out), ["notes.txt"]);
  });

  it("writes into a non-empty directory with --force, keeping unrelated files", () => {
    const out = path.join(tmpDir(), "busy-svc");
    write(out, "notes.txt", "mine\n");
    write(out, "package.json", "{}\n");
    const r = runCli([out, ...QUIET, "--force"], { template });
    assert.equal(r.status, 0, r.stderr);
    assert.equal(read(out, "notes.txt"), "mine\n");
    assert.equal(JSON.parse(read(out, "package.json")).name, "busy-svc");
  });

  it("refuses to write into the template itself, even with --force", () => {
    const r = runCli([path.join(template, "sub"), ...QUIET, "--force", "--name", "sub-svc"], { template });
    assertUsageError(r, /cannot write into the template itself/);
    assert.ok(!fs.existsSync(path.join(template, "sub")));
  });

  it("rejects a target that is a file", () => {
    const out = path.join(tmpDir(), "file-svc");
    write(out, "", "x");
    assertUsageError(runCli([out, ...QUIET, "--force"], { template }), /exists and is not a directory/);
  });
});

describe("help, version and a broken template", () => {
  for (const variant of ["tsx", "dist"] as Variant[]) {
    it(`--help lists every flag (${variant})`, () => {
      const r = runCli(["--help"], { variant });
      assert.equal(r.status, 0);
      for (const flag of ["--name", "--yes", "-y", "--auth", "--admin-port", "--unix-socket", "--no-sse", "--no-install", "--no-git", "--force", "--help", "--version"]) {
        assert.ok(r.stdout.includes(flag), `${flag} missing from --help`);
      }
    });
    it(`--version prints the package version (${variant})`, () => {
      const r = runCli(["-v"], { variant });
      assert.equal(r.status, 0);
      assert.equal(r.stdout, `${version}\n`);
    });
  }

  it("fails with exit 1 and writes nothing when the third-party protos were not gathered", () => {
    const root = tmpDir();
    const broken = path.join(root, "template");
    fs.cpSync(template, broken, { recursive: true });
    fs.rmSync(path.join(broken, "proto/google"), { recursive: true });
    const out = path.join(root, "demo-svc");
    const r = runCli([out, ...QUIET], { template: broken });
    assert.equal(r.status, 1);
    assert.match(r.stderr, /^create-grpc-svc: the third-party protos were not gathered .*npm run protos/);
    assert.ok(!fs.existsSync(out));
  });
});

describe("post-render steps", () => {
  const gitEnv = (home: string) => ({ HOME: home, XDG_CONFIG_HOME: home, GIT_CONFIG_NOSYSTEM: "1", GIT_CONFIG_GLOBAL: path.join(home, "none") });

  it("creates one commit on main, with a fallback identity, that does not contain .env", () => {
    const root = tmpDir();
    const out = path.join(root, "git-svc");
    const r = runCli([out, "--yes", "--no-install", "--auth", "jwt"], { template, env: gitEnv(root) });
    assert.equal(r.status, 0, r.stderr);
    const git = (...a: string[]) => spawnSync("git", a, { cwd: out, encoding: "utf8", env: { ...process.env, ...gitEnv(root) } }).stdout.trim();
    assert.equal(git("log", "--format=%an <%ae>|%s"), "create-grpc-svc <create-grpc-svc@localhost>|Initial commit from create-grpc-svc");
    assert.equal(git("branch", "--show-current"), "main");
    const tracked = git("ls-files").split("\n");
    assert.ok(tracked.includes("proto/git/v1/git.proto"));
    assert.ok(tracked.includes(".env.example"));
    assert.ok(!tracked.includes(".env"), ".env with secrets must not be committed");
    assert.equal(git("status", "--porcelain"), "");
  });

  it("warns and succeeds when git is not installed", () => {
    const root = tmpDir();
    const emptyBin = path.join(root, "bin");
    fs.mkdirSync(emptyBin);
    const out = path.join(root, "nogit-svc");
    const r = runCli([out, "--yes", "--no-install"], { template, variant: "dist", env: { PATH: emptyBin } });
    assert.equal(r.status, 0, r.stderr);
    assert.equal(r.stderr, "create-grpc-svc: warning: git was not found, so no repository was created\n");
    assert.ok(!fs.existsSync(path.join(out, ".git")));
  });

  it("keeps the files and names the failed step and the commands to finish when npm install fails", () => {
    const root = tmpDir();
    const bin = path.join(root, "bin");
    write(bin, "npm", "#!/bin/sh\necho 'npm ERR! simulated failure' >&2\nexit 7\n", 0o755);
    const out = path.join(root, "fail-svc");
    const r = runCli(["fail-svc", "--yes"], { template, cwd: root, env: { ...gitEnv(root), PATH: `${bin}${path.delimiter}${process.env.PATH}` } });
    assert.equal(r.status, 1);
    assert.match(r.stderr, /create-grpc-svc: npm install failed \(exit code 7\)\. The generated files \(\d+ files in \.\/fail-svc\) are kept; to finish, run:\n/);
    assert.ok(
      r.stderr.includes(`  cd ./fail-svc && npm install --no-audit --no-fund && git init -b main && git add -A && git commit -m "Initial commit from create-grpc-svc"\n`),
      r.stderr,
    );
    assert.ok(fs.existsSync(path.join(out, "proto/fail/v1/fail.proto")));
    assert.ok(!fs.existsSync(path.join(out, ".git")), "git runs after install, so it did not run");
  });
});

describe("the real template/", () => {
  it("scaffolds from template/ itself with no example token left", () => {
    assert.ok(realTemplateReady(), "template/ has its gathered protos (npm run protos)");
    const out = path.join(tmpDir(), "real-svc");
    const r = runCli([out, ...QUIET]);
    assert.equal(r.status, 0, r.stderr);
    assert.ok(fs.existsSync(path.join(out, "proto/real/v1/real.proto")));
    assert.ok(!listFiles(out).some((f) => /^(node_modules|dist|src\/gen)\//.test(f)));
    assert.deepEqual(leftoverExampleTokens(out), []);
  });
});
