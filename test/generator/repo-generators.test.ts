// The generated repository's own generators (template/generators/) after the scaffolder has copied and renamed
// the real template: the generator files arrive intact, and the generators find their places in the renamed
// src/main.ts, service file and proto. Plans only: nothing is written, so no buf generate or npm install is
// needed (the template's node_modules stands in). The e2e runs them for real through make; the command itself
// (asking in a terminal, refusing without one) is tested below.
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import fs from "node:fs";
import path from "node:path";
import { PassThrough } from "node:stream";
import { before, describe, it } from "node:test";
import { pathToFileURL } from "node:url";
import { deriveNames } from "../../generator/names.js";
import { listTemplateFiles, render } from "../../generator/render.js";
import { makeCliTemplate, REAL_TEMPLATE, tmpDir } from "./helpers.js";

type Change = { path: string; text: string; create: boolean };
interface Generators {
  planService(root: string, name: string): Change[];
  planRpc(root: string, answers: { service: string; name: string; kind: string; http?: string }): Change[];
  planPart(root: string, answers: { name: string; service?: string }, kind: "interceptor" | "worker"): Change[];
  partServiceProblem(root: string, service: string): string | undefined;
  apply(root: string, changes: Change[], options: { generate: boolean }): string;
}

/** The generators' modules in the repository at `root`, as one object. */
async function load(root: string): Promise<Generators> {
  const mod = (f: string) => import(pathToFileURL(path.join(root, "generators", f)).href);
  return { ...(await mod("new-service.ts")), ...(await mod("new-rpc.ts")), ...(await mod("new-part.ts")), ...(await mod("apply.ts")) } as Generators;
}

/** A scaffolded pay-svc with the template's node_modules linked in (no npm install). */
async function scaffold(): Promise<string> {
  const root = tmpDir();
  const out = path.join(root, "pay-svc");
  await render({
    templateDir: makeCliTemplate(root),
    targetDir: out,
    names: deriveNames("pay-svc"),
    choices: { auth: "none", unixSocket: false, sse: true, install: false, git: false },
    secret: () => "SECRET",
  });
  fs.symlinkSync(path.join(REAL_TEMPLATE, "node_modules"), path.join(out, "node_modules"), "dir");
  return out;
}

const changed = (changes: Change[], rel: string) => {
  const c = changes.find((x) => x.path === rel);
  assert.ok(c, `${rel} is planned: ${changes.map((x) => x.path).join(", ")}`);
  return c.text;
};

describe("the generators in a scaffolded repository (pay-svc)", () => {
  let out = "";
  let repo = "";
  let gen: Generators;

  before(async () => {
    assert.ok(fs.existsSync(path.join(REAL_TEMPLATE, "node_modules/@babel/parser")), "template/node_modules is installed (cd template && npm install)");
    out = await scaffold();
    repo = out;
    gen = await load(out);
  });

  it("copies the generators and their templates, the templates byte for byte; no plop", () => {
    const files = listTemplateFiles(REAL_TEMPLATE).filter((f) => f.startsWith("generators/"));
    assert.ok(files.includes("generators/cli.ts") && files.some((f) => f.startsWith("generators/templates/")), files.join(", "));
    for (const f of files) {
      assert.ok(fs.existsSync(path.join(out, f)), `${f} is in the generated repo`);
      if (f.startsWith("generators/templates/")) assert.equal(fs.readFileSync(path.join(out, f), "utf8"), fs.readFileSync(path.join(REAL_TEMPLATE, f), "utf8"), f);
    }
    assert.ok(!fs.existsSync(path.join(out, "plopfile.js")) && !fs.existsSync(path.join(out, "plop")));
    const makefile = fs.readFileSync(path.join(out, "Makefile"), "utf8");
    for (const target of ["new-service", "new-rpc", "new-interceptor", "new-worker"]) assert.match(makefile, new RegExp(`^${target}: `, "m"));
    const pkg = JSON.parse(fs.readFileSync(path.join(out, "package.json"), "utf8")) as { devDependencies: Record<string, string>; scripts: Record<string, string> };
    assert.ok(pkg.devDependencies["@babel/parser"] && !pkg.devDependencies.plop, "the parser is a dev dependency, plop is not");
    assert.match(pkg.scripts.lint ?? "", /oxlint .*generators.* && oxfmt --check .*generators/, "make lint checks the generators");
    assert.equal(pkg.scripts.new, "node --import tsx generators/cli.ts", "npm run new asks which generator");
  });

  it("new-service adds the service to the renamed src/main.ts's run list", () => {
    const changes = gen.planService(repo, "billing");
    assert.deepEqual(
      changes.map((c) => c.path),
      ["proto/billing/v1/billing.proto", "src/service/billing-service.ts", "test/billing-service.test.ts", "src/main.ts"],
    );
    const main = changed(changes, "src/main.ts");
    assert.match(main, /run\(\[payService,\s*billingService\]\)/);
    assert.match(main, /import \{ billingService \} from "\.\/service\/billing-service\.js";/);
    assert.match(changed(changes, "proto/billing/v1/billing.proto"), /^package billing\.v1;$/m);
  });

  it("new-rpc inserts the RPC inside the renamed service, its messages and the stub", () => {
    const changes = gen.planRpc(repo, { service: "pay", name: "Refund", kind: "server-stream", http: "get:/api/v1/pay/refunds/{refund_id}" });
    const proto = changed(changes, "proto/pay/v1/pay.proto");
    const service = proto.slice(proto.indexOf("service PayService {"), proto.indexOf("\n}\n", proto.indexOf("service PayService {")));
    assert.match(service, /rpc Refund\(RefundRequest\) returns \(stream RefundResponse\) \{\n\s+option \(google\.api\.http\) = \{\n\s+get: "\/api\/v1\/pay\/refunds\/\{refund_id\}"/);
    assert.match(proto, /message RefundRequest \{\n {2}string refund_id = 1 \[\(buf\.validate\.field\)\.string\.min_len = 1\];\n\}/);
    const handlers = changed(changes, "src/service/pay-service.ts");
    assert.match(handlers, /async \*refund\(_request, _ctx\) \{\n\s+throw new GrpcError\(Code\.UNIMPLEMENTED, "Refund is not implemented yet"\);/);
    assert.match(changed(changes, "test/pay-refund.test.ts"), /refund\(\{ refundId: "x" \}\)/);
  });

  it("new-rpc writes client-streaming and bidi stubs over the request stream, tested with a plain grpc-js client", () => {
    for (const [kind, name, star] of [["client-stream", "Upload", ""], ["bidi", "Haggle", "*"]] as const) {
      const changes = gen.planRpc(repo, { service: "pay", name, kind });
      assert.match(changed(changes, "proto/pay/v1/pay.proto"), new RegExp(`rpc ${name}\\(stream ${name}Request\\) returns \\(${star ? "stream " : ""}${name}Response\\)`));
      assert.ok(changed(changes, "src/service/pay-service.ts").includes(`async ${star}${name.toLowerCase()}(_requests, _ctx) {`));
      assert.match(changed(changes, `test/pay-${name.toLowerCase()}.test.ts`), /rawClient\(PayService, server\.grpcAddress\)/);
    }
  });

  it("new-interceptor and new-worker register in the first service src/main.ts runs", () => {
    const interceptor = changed(gen.planPart(repo, { name: "audit" }, "interceptor"), "src/service/pay-service.ts");
    assert.match(interceptor, /preStart\(app\) \{\napp\.prepend\(auditInterceptor\);\n\}/);
    const worker = changed(gen.planPart(repo, { name: "reindex" }, "worker"), "src/service/pay-service.ts");
    assert.match(worker, /workers: \[[^\n]*,\nreindexWorker\]/);
  });

  it("refuses bad input with one precise line, before anything is planned or written", () => {
    const cases: [() => unknown, RegExp][] = [
      [() => gen.planService(repo, "Billing"), /^invalid NAME "Billing": use kebab case/],
      [() => gen.planService(repo, "pay"), /^service pay exists already: proto\/pay\/v1\/pay\.proto$/],
      [() => gen.planService(repo, "google"), /^invalid NAME "google": proto\/google\/ holds vendored/],
      [() => gen.planRpc(repo, { service: "nope", name: "Refund", kind: "unary" }), /^no service nope: proto\/nope\/v1\/nope\.proto does not exist/],
      [() => gen.planRpc(repo, { service: "pay", name: "Echo", kind: "unary" }), /^PayService has an RPC Echo already$/],
      [() => gen.planRpc(repo, { service: "pay", name: "ToString", kind: "unary" }), /toString is a member of every JavaScript object/],
      [() => gen.planRpc(repo, { service: "pay", name: "Refund", kind: "unary", http: "post:/api/v1/{a}/{a}" }), /a variable appears twice/],
      [() => gen.planRpc(repo, { service: "pay", name: "Refund", kind: "unary", http: "post:api" }), /^invalid HTTP path "api"/],
      [() => gen.planRpc(repo, { service: "pay", name: "Refund", kind: "unary", http: "post:/api/../admin" }), /^invalid HTTP path "\/api\/\.\.\/admin"/],
      [() => gen.planRpc(repo, { service: "pay", name: "Echo", kind: "both" }), /^invalid KIND "both"/],
      [() => gen.planRpc(repo, { service: "pay", name: "Up", kind: "client-stream", http: "delete:/x" }), /needs post, put or patch$/],
      // A route another method has, under another variable name too: the service would refuse to start.
      [
        () => gen.planRpc(repo, { service: "pay", name: "GetOrder", kind: "unary", http: "get:/api/v1/echo/{id}" }),
        /^GET \/api\/v1\/echo\/\{message\} is already the route of pay\.v1\.PayService\.Echo: /,
      ],
      [() => gen.planRpc(repo, { service: "pay", name: "Again", kind: "unary", http: "post:/api/v1/echo" }), /^POST \/api\/v1\/echo is already the route of pay\.v1\.PayService\.Echo/],
      [() => gen.planService(repo, "v1"), /^invalid NAME "v1": v1 is a version/],
      [() => gen.planPart(repo, { name: "audit", service: "nope" }, "interceptor"), /^no service nope: src\/service\/nope-service\.ts does not exist$/],
      [() => gen.planPart(repo, { name: "x_y" }, "worker"), /^invalid NAME "x_y"/],
      // What the SERVICE prompt of new-interceptor and new-worker asks before planning.
      [() => assert.fail(gen.partServiceProblem(repo, "nope")), /^no service nope: src\/service\/nope-service\.ts does not exist$/],
      [() => assert.fail(gen.partServiceProblem(repo, "No_pe")), /^invalid SERVICE "No_pe"/],
    ];
    // An RPC that new-rpc made before has its test file too: the RPC is what the error names.
    fs.writeFileSync(path.join(out, "test/pay-echo.test.ts"), "// written by an earlier make new-rpc\n");
    cases.push([() => gen.planRpc(repo, { service: "pay", name: "Echo", kind: "unary" }), /^PayService has an RPC Echo already$/]);
    const before = fs.readFileSync(path.join(out, "src/main.ts"), "utf8");
    for (const [plan, message] of cases) assert.throws(plan, (err: Error) => message.test(err.message) && !err.message.includes("\n"), String(message));
    assert.equal(fs.readFileSync(path.join(out, "src/main.ts"), "utf8"), before);
    fs.rmSync(path.join(out, "test/pay-echo.test.ts"));
  });

  it("writes nothing when a file to create has appeared since planning", () => {
    const changes = gen.planPart(repo, { name: "late" }, "worker");
    fs.writeFileSync(path.join(out, "test/late-worker.test.ts"), "// someone else's\n");
    const service = fs.readFileSync(path.join(out, "src/service/pay-service.ts"), "utf8");
    assert.throws(() => gen.apply(out, changes, { generate: false }), /test\/late-worker\.test\.ts exists already/);
    assert.ok(!fs.existsSync(path.join(out, "src/service/late-worker.ts")));
    assert.equal(fs.readFileSync(path.join(out, "src/service/pay-service.ts"), "utf8"), service);
  });
});

describe("the generators' command (generators/cli.ts, what make new-* runs)", () => {
  let out = "";
  before(async () => {
    out = await scaffold();
  });

  /** What a command may have written: every file below src/, test/ and proto/ with its contents. */
  const snapshot = () => {
    const files = new Map<string, string>();
    for (const dir of ["src", "test", "proto"]) {
      for (const f of fs.readdirSync(path.join(out, dir), { recursive: true, encoding: "utf8" })) {
        const file = path.join(out, dir, f);
        if (fs.statSync(file).isFile()) files.set(path.join(dir, f), fs.readFileSync(file, "utf8"));
      }
    }
    return files;
  };
  const env = () => {
    const e = { ...process.env };
    for (const k of ["MAKEFLAGS", "MFLAGS", "MAKELEVEL"]) delete e[k];
    return e;
  };

  it("without a terminal, a missing value is one line naming its variable, exit 1, and nothing is written", () => {
    const before = snapshot();
    for (const [args, message] of [
      [["rpc", "--service=pay", "--kind=unary"], "NAME is required: a PascalCase RPC name"],
      [["rpc", "--name=Refund", "--kind=unary"], "SERVICE is required: a kebab-case name"],
      [["rpc", "--service=pay", "--name=Refund"], "KIND is required: unary, server-stream, client-stream, bidi"],
      [["service"], "NAME is required: a kebab-case name"],
      [["worker", "--service=pay"], "NAME is required: a kebab-case name"],
      [[], "name a generator: service, rpc, interceptor, worker"],
      [["rpc", "--service=pay", "--name=Refund", "--kind=unary", "--bogus=1"], "Unknown option '--bogus'"],
      [["service", "--name=billing", "--kind=unary"], "service takes no --kind"],
    ] as const) {
      // stdin a pipe (not a terminal), as under make in CI.
      const r = spawnSync(process.execPath, ["--import", "tsx", "generators/cli.ts", ...args], { cwd: out, input: "Refund\n", encoding: "utf8", env: env() });
      assert.equal(r.status, 1, `${args.join(" ")}: ${r.stdout}${r.stderr}`);
      assert.equal(r.stdout, "", args.join(" "));
      const lines = r.stderr.trimEnd().split("\n");
      assert.equal(lines.length, 1, `${args.join(" ")}: one line:\n${r.stderr}`);
      assert.ok(lines[0]!.startsWith("✖ ") && lines[0]!.includes(message), `${args.join(" ")}: ${r.stderr}`);
    }
    assert.deepEqual(snapshot(), before);
  });

  it("in a terminal, asks for what make was not given, asks again with the reason, and writes", { timeout: 60_000 }, () => {
    // A real pseudo-terminal (script(1), util-linux): make new-interceptor with no values asks both questions.
    const answers = "Audit\naudit\n\n";
    const r = spawnSync("script", ["-qec", "make -s -o node_modules/.package-lock.json new-interceptor", "/dev/null"], {
      cwd: out,
      input: answers,
      encoding: "utf8",
      env: env(),
      timeout: 60_000,
    });
    assert.equal(r.status, 0, `${r.stdout}${r.stderr}`);
    assert.match(r.stdout, /interceptor name \(kebab case\): /);
    assert.match(r.stdout, /invalid NAME "Audit": use kebab case/);
    assert.match(r.stdout, /Register it in service \(empty: the first one src\/main\.ts runs\): /);
    assert.match(r.stdout, /✔ interceptor: src\/service\/audit-interceptor\.ts, test\/audit-interceptor\.test\.ts, src\/service\/pay-service\.ts/);
    assert.match(fs.readFileSync(path.join(out, "src/service/pay-service.ts"), "utf8"), /app\.prepend\(auditInterceptor\)/);
  });

  it("npm run new, in a terminal, asks which generator (again, when the answer is none of them), then its values", { timeout: 60_000 }, () => {
    const r = spawnSync("script", ["-qec", "npm run -s new", "/dev/null"], { cwd: out, input: "9\nworker\nreindex\n\n", encoding: "utf8", env: env(), timeout: 60_000 });
    assert.equal(r.status, 0, `${r.stdout}${r.stderr}`);
    assert.match(r.stdout, /Generator \(1 service, 2 rpc, 3 interceptor, 4 worker\): /);
    assert.match(r.stdout, /choose one of service, rpc, interceptor, worker/);
    assert.match(r.stdout, /✔ worker: src\/service\/reindex-worker\.ts, test\/reindex-worker\.test\.ts, src\/service\/pay-service\.ts/);
  });

  it("asks every question when given none, takes a choice by its number and a default on Enter", async () => {
    const { catalog } = await import(pathToFileURL(path.join(out, "generators/catalog.ts")).href);
    const { ask, Prompter } = await import(pathToFileURL(path.join(out, "generators/ask.ts")).href);
    const rpc = catalog(out).find((g: { name: string }) => g.name === "rpc");
    const input = new PassThrough();
    const output = new PassThrough();
    let shown = "";
    output.on("data", (d: Buffer) => (shown += d));
    // Typed ahead of the prompts: a missing service, a taken RPC name, a kind out of range, then Enter for HTTP.
    input.end("nope\npay\nEcho\nGetInvoice\n7\n2\n\n");
    const prompter = new Prompter({ input, output });
    const answers = await ask(rpc.questions, { service: "", name: "", kind: "", http: "" }, prompter);
    prompter.close();
    assert.deepEqual(answers, { service: "pay", name: "GetInvoice", kind: "server-stream", http: "post:/api/v1/pay/get-invoice" });
    assert.match(shown, /no service nope: proto\/nope\/v1\/nope\.proto does not exist/);
    assert.match(shown, /PayService has an RPC Echo already/);
    assert.match(shown, /invalid KIND "7"/);
    assert.match(shown, /HTTP rule \(verb:\/path, or none\) \[post:\/api\/v1\/pay\/get-invoice\]: /);
  });

  it("asks only for the required values missing once some are given, and refuses a given one at once", async () => {
    const { catalog } = await import(pathToFileURL(path.join(out, "generators/catalog.ts")).href);
    const { ask, missing, Prompter } = await import(pathToFileURL(path.join(out, "generators/ask.ts")).href);
    const generators = catalog(out);
    const questions = (name: string) => generators.find((g: { name: string }) => g.name === name).questions;
    const keys = (qs: { key: string }[]) => qs.map((q) => q.key);
    assert.deepEqual(keys(missing(questions("interceptor"), { name: "audit", service: "" })), []);
    assert.deepEqual(keys(missing(questions("interceptor"), { name: "", service: "" })), ["name", "service"]);
    assert.deepEqual(keys(missing(questions("rpc"), { service: "pay", name: "", kind: "", http: "" })), ["name", "kind"]);
    const input = new PassThrough();
    input.end("Refund\n");
    const prompter = new Prompter({ input, output: new PassThrough() });
    await assert.rejects(ask(questions("rpc"), { service: "nope", name: "", kind: "unary", http: "" }, prompter), /^Error: no service nope: /);
    prompter.close();
  });
});
