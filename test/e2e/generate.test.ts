// End to end, the way users get it: pack the scaffolder as npm would publish it, run the tarball's bin with
// `npm exec` (what `npm create grpc-svc` does) with stdin not a TTY, then run `make test` (and in one, after replacing its own service by another, `make test-framework` and a quick `make bench` of the new one) inside each
// generated repository. Slow (two `npm install`s and two test suites): `make test-e2e` runs it alone.
//
// E2E_KEEP=1 keeps the temp directory for inspection.
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { after, before, describe, test } from "node:test";
import { stripVTControlCharacters } from "node:util";
import { assertOk, childEnv, MINUTE, type Result, ROOT as root, run } from "./support.js";

// Third-party protos (and the code generated from them) are copied verbatim; their comments say
// "for example" and even `example.v1`, which is theirs, not the service's.
const VERBATIM = ["proto/google", "proto/grpc", "proto/buf", "src/gen/google", "src/gen/grpc", "src/gen/buf"];
const SKIP = new Set(["node_modules", ".git", "dist"]);

function repoFiles(dir: string, rel = ""): string[] {
  return fs.readdirSync(path.join(dir, rel), { withFileTypes: true }).flatMap((e) => {
    const child = rel ? `${rel}/${e.name}` : e.name;
    if (SKIP.has(e.name) || VERBATIM.includes(child)) return [];
    if (e.isDirectory()) return repoFiles(dir, child);
    return e.isFile() ? [child] : [];
  });
}

/** Lines that still carry the template's service name. `.env.example` is the conventional file name, not a name. */
function leftoverTokens(dir: string): string[] {
  const token = /(?<![A-Za-z0-9])(?:example|Example|EXAMPLE)(?![a-z0-9])/;
  return repoFiles(dir).flatMap((rel) => {
    const bytes = fs.readFileSync(path.join(dir, rel));
    if (bytes.includes(0)) return [];
    const hits = token.test(rel.replace(/\.env\.example/g, "")) ? [`${rel} (path)`] : [];
    bytes
      .toString("utf8")
      .split("\n")
      .forEach((line, i) => {
        // Reserved example domains (example.com, the .example TLD) are never renamed, on purpose.
        const kept = line.replace(/\.env\.example/g, "").replace(/example\.(?:com|net|org)(?![A-Za-z0-9-])|(?<=[A-Za-z0-9-]\.)example(?![a-z0-9])/g, "");
        if (token.test(kept)) hits.push(`${rel}:${i + 1}: ${line.trim()}`);
      });
    return hits;
  });
}

const envValue = (text: string, key: string) => text.match(new RegExp(`^${key}=(.*)$`, "m"))?.[1];

let work = "";
let tarball = "";
let packList: string[] = [];

before(async () => {
  work = fs.mkdtempSync(path.join(os.tmpdir(), "create-grpc-svc-e2e-"));
  const packDir = path.join(work, "pack");
  fs.mkdirSync(packDir);
  // prepack builds dist/ and gathers the third-party protos.
  const r = await run("npm", ["pack", "--pack-destination", packDir], root, 5 * MINUTE);
  assertOk(r, "npm pack");
  const name = fs.readdirSync(packDir).find((f) => f.endsWith(".tgz"));
  assert.ok(name, "npm pack wrote a .tgz");
  tarball = path.join(packDir, name);
  const list = await run("tar", ["-tzf", tarball], work, MINUTE);
  assertOk(list, "tar -t");
  packList = list.output.split("\n").filter(Boolean);
});

after(() => {
  if (work && !process.env.E2E_KEEP) fs.rmSync(work, { recursive: true, force: true });
  else if (work) console.log(`# kept ${work}`);
});

test("the tarball carries the compiled CLI, the template and the gathered protos, and no local state", () => {
  for (const file of [
    "package/dist/generator/cli.js",
    "package/template/package.json",
    "package/template/package-lock.json",
    "package/template/Makefile",
    "package/template/_gitignore",
    "package/template/.env.example",
    "package/template/.dockerignore",
    "package/template/Dockerfile",
    "package/template/README.md",
    "package/template/docs/configuration.md",
    "package/template/proto/google/api/annotations.proto",
    "package/template/proto/google/api/http.proto",
    "package/template/proto/buf/validate/validate.proto",
    "package/template/proto/grpc/health/v1/health.proto",
  ]) {
    assert.ok(packList.includes(file), `${file} is in the tarball`);
  }
  for (const prefix of ["package/template/node_modules/", "package/template/src/gen/", "package/template/dist/", "package/template/.env"]) {
    const found = packList.filter((f) => f === prefix || (prefix.endsWith("/") ? f.startsWith(prefix) : f === prefix));
    assert.deepEqual(found, [], `${prefix} is not in the tarball`);
  }
  assert.ok(!packList.some((f) => f.startsWith("package/generator/")), "TypeScript sources of the generator are not shipped");
});

/** Scaffolds `name` in a fresh directory under `work` and returns the generated repo's path. */
async function scaffold(name: string, flags: string[]): Promise<{ dir: string; result: Result }> {
  const cwd = fs.mkdtempSync(path.join(work, `${name}-`));
  const result = await run("npm", ["exec", "--yes", `--package=${tarball}`, "--", "create-grpc-svc", name, ...flags], cwd, 10 * MINUTE);
  return { dir: path.join(cwd, name), result };
}

describe("demo-svc --yes (defaults: install and git)", () => {
  let dir = "";

  test("scaffolds", { timeout: 10 * MINUTE }, async (t) => {
    const s = await scaffold("demo-svc", ["--yes"]);
    dir = s.dir;
    assertOk(s.result, "create-grpc-svc demo-svc --yes");
    t.diagnostic(`scaffolded with npm install in ${s.result.ms} ms`);
    assert.ok(fs.existsSync(path.join(dir, "node_modules/.package-lock.json")), "dependencies are installed");
    // npm 11 lists the dependency install scripts package.json's allowScripts leaves undecided: there are none.
    assert.doesNotMatch(s.result.output, /install-scripts/, "no install-script warning for the user to act on");
    // SPEC §4.18: a generated repo's dependencies are those its own targets use, ≤ 250 MB installed.
    const du = await run("du", ["-sm", "node_modules"], dir, MINUTE);
    const mb = Number(du.stdout.split("\t")[0]);
    t.diagnostic(`node_modules: ${mb} MB`);
    assert.ok(mb <= 250, `node_modules is ${mb} MB, over the 250 MB a generated repo may take`);
  });

  test("renames every example token", () => {
    assert.ok(fs.existsSync(path.join(dir, "proto/demo/v1/demo.proto")));
    assert.match(fs.readFileSync(path.join(dir, "proto/demo/v1/demo.proto"), "utf8"), /^package demo\.v1;$/m);
    assert.deepEqual(leftoverTokens(dir), []);
    assert.equal(fs.readFileSync(path.join(dir, "README.md"), "utf8").split("\n")[0], "# demo-svc");
    assert.equal(JSON.parse(fs.readFileSync(path.join(dir, "package.json"), "utf8")).name, "demo-svc");
    assert.equal(fs.readFileSync(path.join(dir, ".nvmrc"), "utf8").trim(), "24", "the repo names its Node version");
  });

  test("writes .gitignore and commits everything but .env", async () => {
    assert.ok(fs.existsSync(path.join(dir, ".gitignore")) && !fs.existsSync(path.join(dir, "_gitignore")));
    const log = await run("git", ["log", "--oneline"], dir, MINUTE);
    assertOk(log, "git log");
    assert.equal(log.output.trim().split("\n").length, 1, log.output);
    const tracked = await run("git", ["ls-files"], dir, MINUTE);
    assert.ok(tracked.output.split("\n").includes("Makefile"));
    assert.ok(!tracked.output.split("\n").includes(".env"), ".env is not committed");
    assert.ok(tracked.output.split("\n").includes("proto/google/api/annotations.proto"), "third-party protos are committed");
  });

  test("make test passes in the generated repository", { timeout: 15 * MINUTE }, async (t) => {
    const r = await run("make", ["test"], dir, 15 * MINUTE);
    assertOk(r, "make test in demo-svc");
    t.diagnostic(`make test took ${r.ms} ms`);
  });

  test("make lint (buf lint, type check, oxlint, oxfmt) passes in the generated repository", { timeout: 5 * MINUTE }, async () => {
    assertOk(await run("make", ["lint"], dir, 5 * MINUTE), "make lint in demo-svc");
  });

  test("leaves the work tree clean: generated files are ignored", async () => {
    const status = await run("git", ["status", "--porcelain"], dir, MINUTE);
    assertOk(status, "git status");
    assert.equal(status.output.trim(), "");
  });

  // The repo's own generators (generators/), run as a user would: through the Makefile, without a TTY.
  test("every generator refuses bad input with a one-line error, a non-zero exit and nothing written", { timeout: 5 * MINUTE }, async () => {
    for (const [args, message] of BAD_GENERATOR_INPUT) {
      const r = await run("make", ["-s", ...args], dir, MINUTE);
      assert.notEqual(r.code, 0, `make ${args.join(" ")} fails`);
      const lines = r.output.split("\n").filter((l) => l.includes(message));
      assert.equal(lines.length, 1, `make ${args.join(" ")} says "${message}" once:\n${r.output}`);
      const status = await run("git", ["status", "--porcelain"], dir, MINUTE);
      assert.equal(status.output.trim(), "", `make ${args.join(" ")} wrote nothing`);
    }
  });

  test("every generator runs non-interactively: a service, an RPC of each of the four kinds, an interceptor, a worker", { timeout: 5 * MINUTE }, async (t) => {
    for (const args of GENERATORS) {
      const r = await run("make", ["-s", ...args], dir, 2 * MINUTE);
      assertOk(r, `make ${args.join(" ")}`);
      // One line per generator: what it wrote (plop, before, printed a bare "- " line per step without a terminal).
      const printed = stripVTControlCharacters(r.output);
      assert.doesNotMatch(printed, /^- *$/m, `make ${args.join(" ")} prints the changes only:\n${printed}`);
      assert.match(printed, /^✔ /m, `make ${args.join(" ")} lists what it wrote:\n${printed}`);
      t.diagnostic(`make ${args[0]} took ${r.ms} ms`);
    }
    const main = fs.readFileSync(path.join(dir, "src/main.ts"), "utf8");
    assert.match(main, /await run\(\[demoService, billingService\]\)/);
    const demo = fs.readFileSync(path.join(dir, "src/service/demo-service.ts"), "utf8");
    assert.match(demo, /app\.prepend\(auditInterceptor\)/);
    assert.match(demo, /reindexWorker\]/);
  });

  test("make lint and make test pass after the generators", { timeout: 15 * MINUTE }, async (t) => {
    const lint = await run("make", ["lint"], dir, 5 * MINUTE);
    assertOk(lint, "make lint after the generators");
    const r = await run("make", ["test"], dir, 15 * MINUTE);
    assertOk(r, "make test after the generators");
    for (const name of [
      "Ping answers with the message over gRPC and REST",
      "Refund answers UNIMPLEMENTED until its handler is written",
      "WatchInvoices answers UNIMPLEMENTED until its handler is written",
      "UploadUsage answers UNIMPLEMENTED until its handler is written",
      "Negotiate answers UNIMPLEMENTED until its handler is written",
      "audit runs first, before the framework's interceptors",
      "reindex is started with the service",
    ]) {
      assert.ok(r.output.includes(`✔ ${name}`), `make test ran "${name}"`);
    }
    t.diagnostic(`make lint ${lint.ms} ms, make test ${r.ms} ms`);
  });

  test("the started service answers each new method, all four kinds, over gRPC (buf curl, by reflection) and REST, and documents them in Swagger", { timeout: 5 * MINUTE }, async () => {
    const server = await startService(dir);
    try {
      const grpc = (method: string, body: string) =>
        run(path.join(dir, "node_modules/.bin/buf"), ["curl", "--protocol", "grpc", "--http2-prior-knowledge", `http://127.0.0.1:${server.grpcPort}/billing.v1.BillingService/${method}`, "-d", body], dir, MINUTE);
      const ping = await grpc("Ping", '{"message":"hi"}');
      assertOk(ping, "buf curl Ping");
      assert.deepEqual(JSON.parse(ping.output), { message: "hi" });
      const pingRest = await fetch(`${server.httpUrl}/api/v1/billing/ping/hi`);
      assert.deepEqual([pingRest.status, await pingRest.json()], [200, { message: "hi" }]);

      for (const [method, body, rest] of [
        ["Refund", "{}", { path: "/api/v1/billing/refund", method: "POST", body: "{}" }],
        ["WatchInvoices", '{"accountId":"a1"}', { path: "/api/v1/billing/invoices/a1/watch", method: "GET" }],
        ["UploadUsage", "{}", { path: "/api/v1/billing/upload-usage", method: "POST", body: "{}\n{}\n" }],
        ["Negotiate", "{}", { path: "/api/v1/billing/negotiation", method: "PUT", body: "{}\n" }],
      ] as const) {
        const stub = await grpc(method, body);
        assert.notEqual(stub.code, 0, `${method} over gRPC fails`);
        assert.match(stub.output, /unimplemented/, `${method}: ${stub.output}`);
        assert.match(stub.output, new RegExp(`${method} is not implemented yet`));
        const res = await fetch(`${server.httpUrl}${rest.path}`, {
          method: rest.method,
          ...("body" in rest ? { body: rest.body, headers: { "content-type": "application/json" } } : {}),
        });
        assert.equal(res.status, 501, `${rest.method} ${rest.path}`);
        assert.deepEqual(await res.json(), { code: 12, message: `${method} is not implemented yet`, details: [] });
      }

      // The interceptor runs first and passes calls on: the service's own RPC still answers.
      const echo = await run(path.join(dir, "node_modules/.bin/buf"), ["curl", "--protocol", "grpc", "--http2-prior-knowledge", `http://127.0.0.1:${server.grpcPort}/demo.v1.DemoService/Echo`, "-d", '{"message":"still"}'], dir, MINUTE);
      assertOk(echo, "buf curl Echo");
      assert.equal(JSON.parse(echo.output).message, "still");

      const swagger = await (await fetch(`${server.httpUrl}/swagger/demo.swagger.json`)).json() as { paths: Record<string, unknown> };
      for (const p of ["/api/v1/billing/ping/{message}", "/api/v1/billing/refund", "/api/v1/billing/invoices/{accountId}/watch", "/api/v1/billing/upload-usage", "/api/v1/billing/negotiation", "/api/v1/echo"]) {
        assert.ok(p in swagger.paths, `Swagger documents ${p}: ${Object.keys(swagger.paths).join(", ")}`);
      }
    } finally {
      await server.stop();
    }
  });

  // The framework's own suite must not depend on the user's service: it runs against its own fixture service
  // (test/proto/fixture/). Here the repo's own service is deleted outright (its proto with the RPC added above,
  // its handlers, its tests, its place in src/main.ts), leaving only the billing service the generator made.
  test("make test-framework (the vendored framework's suite) passes in the renamed repo after its own service was replaced by another", { timeout: 20 * MINUTE }, async (t) => {
    assert.match(fs.readFileSync(path.join(dir, "proto/demo/v1/demo.proto"), "utf8"), /rpc Reverse\(/);
    for (const rel of ["proto/demo", "src/service/demo-service.ts", "test/demo-service.test.ts", "test/demo-streams.test.ts"]) {
      assert.ok(fs.existsSync(path.join(dir, rel)), rel);
      fs.rmSync(path.join(dir, rel), { recursive: true });
    }
    fs.writeFileSync(
      path.join(dir, "src/main.ts"),
      'import { run } from "./framework/index.js";\nimport { billingService } from "./service/billing-service.js";\n\nawait run([billingService]);\n',
    );
    // No `make generate` first: make sees the deleted proto itself and makes the generated code again.
    const r = await run("make", ["test-framework"], dir, 20 * MINUTE);
    assertOk(r, "make test-framework in demo-svc");
    assert.ok(!fs.existsSync(path.join(dir, "src/gen/demo")), "no generated code of the deleted proto is left");
    assert.ok(r.output.includes("✔ the framework's tests use nothing of your service"), "the suite checks its own independence");
    t.diagnostic(`make test-framework took ${r.ms} ms`);
  });

  // A generated repo's make bench loads the repo's own service (scripts/bench.ts): here the billing service that
  // replaced the first one, its unary RPC over gRPC (h2load) and over its HTTP route (wrk), with the figures saved
  // as the baseline the next run compares with. The framework's benchmarks (bench/) are not generated.
  test("make bench loads the repo's own RPCs (the billing service that replaced the first one) and saves a baseline", { timeout: 10 * MINUTE }, async (t) => {
    assert.ok(!fs.existsSync(path.join(dir, "proto/demo")), "the repo's own service is gone");
    assert.ok(!fs.existsSync(path.join(dir, "bench")), "the framework's benchmarks are not generated");
    const quick = { BENCH_SECONDS: "1", BENCH_CONNECTIONS: "2", BENCH_STREAMS: "4" };
    const r = await run("make", ["bench"], dir, 10 * MINUTE, quick);
    assertOk(r, "make bench in demo-svc");
    const row = (name: string) => new RegExp(`^${name.replace(/[/.]/g, "\\$&")}\\s+(\\d+)\\s+[\\d.]+\\s+[\\d.]+\\s+(\\d+)$`, "m");
    const grpc = row("gRPC billing.v1.BillingService/Ping").exec(r.stdout);
    const http = row("HTTP GET /api/v1/billing/ping/x").exec(r.stdout);
    assert.ok(grpc && Number(grpc[1]) > 0, `a gRPC row with req/s:\n${r.stdout}`);
    assert.ok(http && Number(http[1]) > 0 && http[2] === "0", `an HTTP row with req/s and no errors:\n${r.stdout}`);
    const saved = JSON.parse(fs.readFileSync(path.join(dir, ".bench-baseline.json"), "utf8")) as { rows: { name: string }[] };
    // Ping, and Refund, which make new-rpc added above: every unary method, over gRPC and its route.
    assert.deepEqual(
      saved.rows.map((x) => x.name),
      ["gRPC billing.v1.BillingService/Ping", "HTTP GET /api/v1/billing/ping/x", "gRPC billing.v1.BillingService/Refund", "HTTP POST /api/v1/billing/refund"],
    );
    t.diagnostic(`make bench (quick) took ${r.ms} ms`);
  });
});

describe("scaffolding speed", () => {
  test("--no-install --no-git completes", { timeout: 5 * MINUTE }, async (t) => {
    // The package is in npm's cache by now, so this measures npm exec's start plus the generator.
    const s = await scaffold("quick-svc", ["--yes", "--no-install", "--no-git"]);
    assertOk(s.result, "create-grpc-svc quick-svc --no-install --no-git");
    assert.ok(fs.existsSync(path.join(s.dir, "Makefile")));
    assert.ok(!fs.existsSync(path.join(s.dir, "node_modules")) && !fs.existsSync(path.join(s.dir, ".git")));
    t.diagnostic(`npm exec create-grpc-svc --no-install --no-git: ${s.result.ms} ms`);

    // The bin alone, without npm exec's own start-up (dist/ was built by prepack).
    const cwd = fs.mkdtempSync(path.join(work, "direct-"));
    const direct = await run(process.execPath, [path.join(root, "dist/generator/cli.js"), "direct-svc", "--yes", "--no-install", "--no-git"], cwd, MINUTE);
    assertOk(direct, "node dist/generator/cli.js");
    t.diagnostic(`node dist/generator/cli.js --no-install --no-git: ${direct.ms} ms`);
  });
});

describe("pay-service --auth both --admin-port 9095 --unix-socket --no-sse", () => {
  let dir = "";

  test("scaffolds", { timeout: 10 * MINUTE }, async () => {
    const s = await scaffold("pay-service", ["--yes", "--auth", "both", "--admin-port", "9095", "--unix-socket", "--no-sse"]);
    dir = s.dir;
    assertOk(s.result, "create-grpc-svc pay-service");
  });

  test("renames every example token", () => {
    const proto = fs.readFileSync(path.join(dir, "proto/pay/v1/pay.proto"), "utf8");
    assert.match(proto, /^package pay\.v1;$/m);
    assert.match(proto, /^service PayService \{$/m);
    assert.deepEqual(leftoverTokens(dir), []);
  });

  test("puts the choices in .env, the secrets in .env only, and the choices in the README", () => {
    const env = fs.readFileSync(path.join(dir, ".env"), "utf8");
    const example = fs.readFileSync(path.join(dir, ".env.example"), "utf8");
    assert.ok((envValue(env, "JWT_SECRET") ?? "").length >= 32, "JWT_SECRET is set");
    assert.ok((envValue(env, "API_KEYS") ?? "").length > 0, "API_KEYS is set");
    for (const [key, value] of [
      ["HTTP_HEADER_PREFIXES", "x-api-key"],
      ["ADMIN_PORT", "9095"],
      ["DISABLE_UNIX_GATEWAY", "false"],
      ["DISABLE_SSE_MARSHALER", "true"],
    ] as const) {
      assert.equal(envValue(env, key), value, `.env: ${key}`);
      assert.equal(envValue(example, key), value, `.env.example: ${key}`);
    }
    assert.equal(envValue(example, "JWT_SECRET"), undefined, "no secret in .env.example");
    assert.equal(envValue(example, "API_KEYS"), undefined, "no secret in .env.example");
    assert.equal((fs.statSync(path.join(dir, ".env")).mode & 0o777).toString(8), "600");
    const readme = fs.readFileSync(path.join(dir, "README.md"), "utf8");
    assert.ok(!readme.includes("create-grpc-svc:choices"), "the choices block is replaced");
    assert.match(readme, /9095/);
  });

  test("make test passes in the generated repository", { timeout: 15 * MINUTE }, async (t) => {
    const r = await run("make", ["test"], dir, 15 * MINUTE);
    assertOk(r, "make test in pay-service");
    t.diagnostic(`make test took ${r.ms} ms`);
  });

  test("make lint (buf lint, type check, oxlint, oxfmt) passes in the generated repository", { timeout: 5 * MINUTE }, async () => {
    assertOk(await run("make", ["lint"], dir, 5 * MINUTE), "make lint in pay-service");
  });
});

// Run in this order in demo-svc (each RPC kind once).
const GENERATORS: string[][] = [
  ["new-service", "NAME=billing"],
  ["new-rpc", "SERVICE=billing", "NAME=Refund", "KIND=unary"],
  ["new-rpc", "SERVICE=billing", "NAME=WatchInvoices", "KIND=server-stream", "HTTP=get:/api/v1/billing/invoices/{account_id}/watch"],
  ["new-rpc", "SERVICE=billing", "NAME=UploadUsage", "KIND=client-stream"],
  ["new-rpc", "SERVICE=billing", "NAME=Negotiate", "KIND=bidi", "HTTP=put:/api/v1/billing/negotiation"],
  // An RPC on the repository's own service: make test and make test-framework must stay green with it.
  ["new-rpc", "SERVICE=demo", "NAME=Reverse", "KIND=unary"],
  ["new-interceptor", "NAME=audit"],
  ["new-worker", "NAME=reindex"],
];

// Tried on the clean tree: each must fail before writing anything.
const BAD_GENERATOR_INPUT: [string[], string][] = [
  [["new-service", "NAME=Billing"], 'invalid NAME "Billing"'],
  [["new-service"], "NAME is required"],
  [["new-service", "NAME=demo"], "service demo exists already"],
  [["new-rpc", "SERVICE=nope", "NAME=Refund", "KIND=unary"], "no service nope"],
  [["new-rpc", "SERVICE=demo", "NAME=refund", "KIND=unary"], 'invalid NAME "refund"'],
  [["new-rpc", "SERVICE=demo", "NAME=Echo", "KIND=unary"], "DemoService has an RPC Echo already"],
  [["new-rpc", "SERVICE=demo", "NAME=Refund", "KIND=sideways"], 'invalid KIND "sideways"'],
  [["new-rpc", "SERVICE=demo", "NAME=Refund", "KIND=unary", "HTTP=fetch:/x"], 'invalid HTTP "fetch:/x"'],
  [["new-rpc", "SERVICE=demo", "NAME=Refund", "KIND=bidi", "HTTP=get:/x"], "a bidi RPC reads its request messages from the body"],
  [["new-interceptor", "NAME=Audit_Log"], 'invalid NAME "Audit_Log"'],
  [["new-interceptor", "NAME=audit", "SERVICE=nope"], "no service nope"],
  [["new-worker", "NAME=re--index"], 'invalid NAME "re--index"'],
];

/** A free loopback TCP port (closed again before it is used: good enough for a test machine). */
async function freePort(): Promise<number> {
  const { createServer } = await import("node:net");
  return new Promise((resolve, reject) => {
    const s = createServer();
    s.once("error", reject);
    s.listen(0, "127.0.0.1", () => {
      const { port } = s.address() as { port: number };
      s.close(() => resolve(port));
    });
  });
}

/** Starts the generated service from source and resolves once it logs "ready". */
async function startService(cwd: string): Promise<{ grpcPort: number; httpUrl: string; stop(): Promise<void> }> {
  const grpcPort = await freePort();
  const httpPort = await freePort();
  const env = { ...childEnv(), LISTEN_HOST: "127.0.0.1", GRPC_PORT: String(grpcPort), HTTP_PORT: String(httpPort), LOG_FORMAT: "json", GRPC_GRACEFUL_DURATION_IN_SECONDS: "0" };
  const child = spawn(process.execPath, ["--import", "tsx", "src/main.ts"], { cwd, env, stdio: ["ignore", "pipe", "pipe"] });
  let output = "";
  await new Promise<void>((resolve, reject) => {
    const onData = (d: Buffer) => {
      output += d;
      if (/"msg":"ready"/.test(output)) resolve();
    };
    child.stdout.on("data", onData);
    child.stderr.on("data", onData);
    child.once("exit", (code: number | null) => reject(new Error(`the service exited (${code}) before it was ready:\n${output}`)));
  });
  return {
    grpcPort,
    httpUrl: `http://127.0.0.1:${httpPort}`,
    stop: () =>
      new Promise<void>((resolve) => {
        if (child.exitCode !== null) return resolve();
        child.once("exit", () => resolve());
        child.kill("SIGTERM");
      }),
  };
}
