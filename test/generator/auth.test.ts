// --auth through the real CLI: the generated README states the mode and how to use it, the .env secrets are
// strong and fresh, and the generated repository's `make token` prints a JWT signed with its own JWT_SECRET.
// (Which variables land in .env and .env.example is covered by cli.test.ts and env-readme.test.ts.)
import assert from "node:assert/strict";
import { spawn, spawnSync } from "node:child_process";
import { createHmac } from "node:crypto";
import fs from "node:fs";
import path from "node:path";
import { before, describe, it } from "node:test";
import { makeCliTemplate, parseEnv, REAL_TEMPLATE, runCli, tmpDir } from "./helpers.js";

const QUIET = ["--yes", "--no-install", "--no-git"];
const read = (dir: string, rel: string) => fs.readFileSync(path.join(dir, rel), "utf8");

let template: string;
before(() => {
  template = makeCliTemplate(tmpDir());
});

function scaffold(name: string, auth: string): string {
  const out = path.join(tmpDir(), name);
  const r = runCli([out, ...QUIET, "--auth", auth], { template });
  assert.equal(r.status, 0, r.stderr);
  return out;
}

/** The README's line that states the auth choice. */
const authLine = (readme: string) => readme.split("\n").find((l) => l.startsWith("- **Auth:**")) ?? "";

describe("the generated README states the auth mode", () => {
  const cases: [auth: string, mentions: RegExp[], absent: RegExp[]][] = [
    ["none", [/\boff\b/, /JWT_SECRET/, /API_KEYS/], [/make token/]],
    ["jwt", [/JWT \(HS256\)/, /`JWT_SECRET` in `\.env`/, /`make token`/], [/x-api-key/, /API_KEYS/]],
    ["api-key", [/API keys/, /`x-api-key`/, /`API_KEYS` in `\.env`/], [/JWT/, /make token/]],
    ["both", [/JWT \(HS256\)/, /`x-api-key`/, /`JWT_SECRET` and `API_KEYS` in `\.env`/, /`make token`/], []],
  ];
  for (const [auth, mentions, absent] of cases) {
    it(`--auth ${auth}`, () => {
      const line = authLine(read(scaffold(`${auth.replace("-", "")}-svc`, auth), "README.md"));
      assert.ok(line, "the README has an Auth line");
      for (const re of mentions) assert.match(line, re);
      for (const re of absent) assert.doesNotMatch(line, re);
    });
  }

  it("keeps docs/auth.md, with the calls renamed to the service, and a `make token` target", () => {
    const out = scaffold("ledger-svc", "both");
    const section = read(out, "docs/auth.md");
    assert.match(read(out, "README.md"), /\]\(docs\/auth\.md\)/, "the README links docs/auth.md");
    assert.match(section, /TOKEN=\$\(make -s token\)/);
    assert.match(section, /-H "Authorization: Bearer \$TOKEN" localhost:9091\/api\/v1\/echo/);
    assert.match(section, /-H "x-api-key: \$KEY"/);
    assert.match(section, /http:\/\/localhost:9090\/ledger\.v1\.LedgerService\/Echo/);
    assert.match(section, /JWT_OIDC_ISSUER=/);
    assert.match(read(out, "Makefile"), /^token: /m);
  });
});

describe("the .env secrets", () => {
  it("are at least 32 random bytes each, different in every repository and between the two settings", () => {
    const seen = new Set<string>();
    for (const name of ["one-svc", "two-svc"]) {
      const env = parseEnv(read(scaffold(name, "both"), ".env"));
      for (const key of ["JWT_SECRET", "API_KEYS"]) {
        const value = env.get(key) ?? "";
        assert.ok(Buffer.from(value, "base64url").length >= 32, `${key} is at least 32 bytes`);
        assert.ok(new Set(value).size >= 16, `${key} looks random`);
        assert.ok(!seen.has(value), `${key} is fresh`);
        seen.add(value);
      }
    }
  });
});

describe("make token in a generated repository", () => {
  it("prints an HS256 JWT signed with the repository's JWT_SECRET", () => {
    // `make test` installs template/node_modules before these tests run.
    assert.ok(fs.existsSync(path.join(REAL_TEMPLATE, "node_modules/jose")), "template/node_modules is installed (cd template && npm install)");
    const out = scaffold("token-svc", "jwt");
    // The template's dependencies stand in for `npm install`; -o keeps make from reinstalling them.
    fs.symlinkSync(path.join(REAL_TEMPLATE, "node_modules"), path.join(out, "node_modules"), "dir");
    const env = { ...process.env };
    for (const k of ["JWT_SECRET", "JWT_ISSUER", "JWT_AUDIENCE"]) delete env[k];
    const r = spawnSync("make", ["-s", "-o", "node_modules/.package-lock.json", "token", "SUB=alice"], { cwd: out, env, encoding: "utf8" });
    assert.equal(r.status, 0, r.stderr);
    const token = r.stdout.trim();
    const [header, payload, signature] = token.split(".") as [string, string, string];
    assert.equal(token.split(".").length, 3, "only the token on stdout");
    const secret = parseEnv(read(out, ".env")).get("JWT_SECRET") ?? "";
    const expected = createHmac("sha256", secret).update(`${header}.${payload}`).digest("base64url");
    assert.equal(signature, expected, "signed with .env's JWT_SECRET");
    assert.equal(JSON.parse(Buffer.from(header, "base64url").toString()).alg, "HS256");
    const claims = JSON.parse(Buffer.from(payload, "base64url").toString()) as { sub: string; exp: number };
    assert.equal(claims.sub, "alice");
    assert.ok(claims.exp > Date.now() / 1000, "not expired");
    assert.ok(!r.stdout.includes(secret) && !r.stderr.includes(secret), "the secret is not printed");
  });
});

describe("fail closed: a fresh clone of an --auth repository, without .env", () => {
  it("refuses to start, naming the variables; AUTH_REQUIRED=false starts it deliberately", async () => {
    assert.ok(fs.existsSync(path.join(REAL_TEMPLATE, "node_modules/jose")), "template/node_modules is installed (cd template && npm install)");
    const out = scaffold("closed-svc", "jwt");
    fs.symlinkSync(path.join(REAL_TEMPLATE, "node_modules"), path.join(out, "node_modules"), "dir");
    // What a teammate's clone has: the committed files, no .env (it holds the secret and is never committed).
    fs.rmSync(path.join(out, ".env"));
    assert.match(read(out, "src/main.ts"), /defaults: \{ AUTH_REQUIRED: "true" \}/);
    assert.match(read(out, ".env.example"), /^AUTH_REQUIRED=true$/m);
    const env: NodeJS.ProcessEnv = { ...process.env, GRPC_PORT: "0", HTTP_PORT: "0", LISTEN_HOST: "127.0.0.1", LOG_FORMAT: "json" };
    for (const k of ["JWT_SECRET", "JWT_JWKS_URL", "JWT_OIDC_ISSUER", "API_KEYS", "AUTH_REQUIRED"]) delete env[k];
    const r = spawnSync("make", ["-s", "-o", "node_modules/.package-lock.json", "run"], { cwd: out, env, encoding: "utf8", timeout: 180_000 });
    assert.notEqual(r.status, 0, "it does not start");
    assert.match(
      r.stderr,
      /^config: AUTH_REQUIRED: authentication is required, but no credential source is set: set JWT_SECRET, JWT_JWKS_URL, JWT_OIDC_ISSUER or API_KEYS/m,
    );
    assert.doesNotMatch(r.stdout, /"msg":"ready"/);
    // Deliberately open: it starts (and is stopped once ready).
    const child = spawn("node", ["--import", "tsx", "src/main.ts"], { cwd: out, env: { ...env, AUTH_REQUIRED: "false" }, stdio: ["ignore", "pipe", "pipe"] });
    try {
      let output = "";
      child.stdout.setEncoding("utf8").on("data", (chunk: string) => (output += chunk));
      await new Promise<void>((resolve, reject) => {
        const timer = setTimeout(() => reject(new Error(`not ready: ${output}`)), 60_000);
        child.stdout.on("data", () => {
          if (output.includes('"msg":"ready"')) {
            clearTimeout(timer);
            resolve();
          }
        });
        child.once("exit", (code) => reject(new Error(`exited ${code}: ${output}`)));
      });
    } finally {
      child.kill("SIGKILL");
    }
  });
});
