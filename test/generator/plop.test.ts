// The generated repository's own generators (template/plopfile.js, template/plop/) after the scaffolder has
// copied and renamed the real template: the plop files arrive intact, and the generators find their places in
// the renamed src/main.ts, service file and proto. Plans only: nothing is written, so no buf generate or
// npm install is needed (the template's node_modules stands in). The e2e runs them for real through make.
import assert from "node:assert/strict";
import fs from "node:fs";
import path from "node:path";
import { before, describe, it } from "node:test";
import { pathToFileURL } from "node:url";
import nodePlop from "node-plop";
import { deriveNames } from "../../generator/names.js";
import { listTemplateFiles, render } from "../../generator/render.js";
import { makeCliTemplate, REAL_TEMPLATE, tmpDir } from "./helpers.js";

type Change = { path: string; text: string; create: boolean };
type Repo = { root: string; render: (template: string, data: object) => string };
interface Generators {
  planService(repo: Repo, name: string): Change[];
  planRpc(repo: Repo, answers: { service: string; name: string; kind: string; http?: string }): Change[];
  planPart(repo: Repo, answers: { name: string; service?: string }, kind: "interceptor" | "worker"): Change[];
  partServiceProblem(repo: Repo, service: string): string | undefined;
  apply(root: string, changes: Change[], options: { generate: boolean }): string;
}

const changed = (changes: Change[], rel: string) => {
  const c = changes.find((x) => x.path === rel);
  assert.ok(c, `${rel} is planned: ${changes.map((x) => x.path).join(", ")}`);
  return c.text;
};

describe("the plop generators in a scaffolded repository (pay-svc)", () => {
  let out = "";
  let repo: Repo;
  let gen: Generators;

  before(async () => {
    assert.ok(fs.existsSync(path.join(REAL_TEMPLATE, "node_modules/plop")), "template/node_modules is installed (cd template && npm install)");
    const root = tmpDir();
    out = path.join(root, "pay-svc");
    await render({
      templateDir: makeCliTemplate(root),
      targetDir: out,
      names: deriveNames("pay-svc"),
      choices: { auth: "none", unixSocket: false, sse: true, install: false, git: false },
      secret: () => "SECRET",
    });
    fs.symlinkSync(path.join(REAL_TEMPLATE, "node_modules"), path.join(out, "node_modules"), "dir");
    const plop = await nodePlop();
    repo = { root: out, render: (t, data) => plop.renderString(t, data) };
    gen = (await import(pathToFileURL(path.join(out, "plop/generators.ts")).href)) as Generators;
  });

  it("copies plopfile.js, the generators and their templates; the templates byte for byte", () => {
    const plopFiles = listTemplateFiles(REAL_TEMPLATE).filter((f) => f === "plopfile.js" || f.startsWith("plop/"));
    assert.ok(plopFiles.includes("plopfile.js") && plopFiles.some((f) => f.endsWith(".hbs")), plopFiles.join(", "));
    for (const f of plopFiles) {
      assert.ok(fs.existsSync(path.join(out, f)), `${f} is in the generated repo`);
      if (f.endsWith(".hbs")) assert.equal(fs.readFileSync(path.join(out, f), "utf8"), fs.readFileSync(path.join(REAL_TEMPLATE, f), "utf8"), f);
    }
    const makefile = fs.readFileSync(path.join(out, "Makefile"), "utf8");
    for (const target of ["new-service", "new-rpc", "new-interceptor", "new-worker"]) assert.match(makefile, new RegExp(`^${target}: `, "m"));
    const pkg = JSON.parse(fs.readFileSync(path.join(out, "package.json"), "utf8")) as { devDependencies: Record<string, string>; scripts: Record<string, string> };
    assert.ok(pkg.devDependencies.plop && pkg.devDependencies["@babel/parser"], "plop and the parser are dev dependencies");
    assert.match(pkg.scripts.lint ?? "", /oxlint .*plop.* && oxfmt --check .*plop/, "make lint checks the generators");
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
