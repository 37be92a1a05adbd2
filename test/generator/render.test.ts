import assert from "node:assert/strict";
import fs from "node:fs";
import path from "node:path";
import { before, describe, it } from "node:test";
import type { Choices } from "../../generator/env-file.js";
import { deriveNames } from "../../generator/names.js";
import { assertTemplateReady, defaultTemplateDir, findPackageRoot } from "../../generator/package-root.js";
import { listTemplateFiles, render } from "../../generator/render.js";
import { BINARY, leftoverExampleTokens, listFiles, makeSyntheticTemplate, parseEnv, REPO, tmpDir, write } from "./helpers.js";

const defaults: Choices = { auth: "none", unixSocket: false, sse: true, install: false, git: false };

describe("rendering a synthetic template with node-plop", () => {
  let template: string;
  let out: string;
  let files: number;

  before(async () => {
    const root = tmpDir();
    template = makeSyntheticTemplate(root);
    out = path.join(root, "out");
    ({ files } = await render({
      templateDir: template,
      targetDir: out,
      names: deriveNames("order-book-service"),
      choices: { ...defaults, auth: "both", adminPort: 9100 },
      secret: () => "SECRET",
    }));
  });

  it("writes the renamed tree, skipping local state, and counts the files", () => {
    assert.deepEqual(listFiles(out), [
      ".env",
      ".env.example",
      ".gitignore",
      "README.md",
      "assets/logo.bin",
      "deploy/grafana/dashboard.json",
      "deploy/k8s/deployment.yaml",
      "package-lock.json",
      "package.json",
      "proto/google/api/http.proto",
      "proto/orderbook/v1/orderbook.proto",
      "scripts/run.sh",
      "src/main.ts",
    ]);
    assert.equal(files, 13);
  });

  it("leaves no example token outside .env.example references and vendored protos", () => {
    // The one survivor is a real dependency's name in the lockfile, which must not change.
    assert.deepEqual(leftoverExampleTokens(out), ['package-lock.json:11: "node_modules/example-lib": {']);
  });

  it("renames code identifiers consistently", () => {
    const main = fs.readFileSync(path.join(out, "src/main.ts"), "utf8");
    assert.match(main, /import \{ OrderBookService, file_orderbook_v1_orderbook \} from "\.\/gen\/orderbook\/v1\/orderbook_pb\.js"/);
    assert.match(main, /ORDERBOOK_LIMIT/);
    assert.match(main, /OrderBookServiceHandlers/);
    assert.match(main, /\.env\.example/);
    const proto = fs.readFileSync(path.join(out, "proto/orderbook/v1/orderbook.proto"), "utf8");
    assert.match(proto, /package orderbook\.v1;\nservice OrderBookService \{\}/);
  });

  it("copies binary files byte-for-byte and vendored protos unchanged", () => {
    assert.ok(fs.readFileSync(path.join(out, "assets/logo.bin")).equals(BINARY));
    assert.equal(
      fs.readFileSync(path.join(out, "proto/google/api/http.proto"), "utf8"),
      fs.readFileSync(path.join(template, "proto/google/api/http.proto"), "utf8"),
    );
  });

  it("keeps the executable bit", () => {
    assert.equal(fs.statSync(path.join(out, "scripts/run.sh")).mode & 0o777, 0o755);
  });

  it("keeps Handlebars-looking text such as Grafana legends", () => {
    const dash = JSON.parse(fs.readFileSync(path.join(out, "deploy/grafana/dashboard.json"), "utf8"));
    assert.equal(dash.legendFormat, "{{instance}}");
    assert.equal(dash.title, "order-book-service");
    assert.match(dash.expr, /grpc_service="orderbook\.v1\.OrderBookService"/);
  });

  it("uses the full name for package.json, the lockfile root and deploy names", () => {
    const pkg = JSON.parse(fs.readFileSync(path.join(out, "package.json"), "utf8"));
    assert.equal(pkg.name, "order-book-service");
    assert.equal(pkg.description, "order-book-service: a gRPC service");
    assert.equal(pkg.scripts.generate, "buf generate proto/orderbook");
    const lock = JSON.parse(fs.readFileSync(path.join(out, "package-lock.json"), "utf8"));
    assert.equal(lock.packages[""].name, "order-book-service");
    assert.ok(lock.packages["node_modules/example-lib"]);
    assert.match(fs.readFileSync(path.join(out, "deploy/k8s/deployment.yaml"), "utf8"), /name: order-book-service\n/);
  });

  it("renames _gitignore to .gitignore", () => {
    assert.equal(fs.readFileSync(path.join(out, ".gitignore"), "utf8"), "node_modules/\ndist/\n.env\n");
  });

  it("writes .env from .env.example plus secrets, mode 0600, replacing commented lines", () => {
    const env = fs.readFileSync(path.join(out, ".env"), "utf8");
    const vars = parseEnv(env);
    assert.equal(vars.get("JWT_SECRET"), "SECRET");
    assert.equal(vars.get("API_KEYS"), "SECRET");
    assert.equal(vars.get("HTTP_HEADER_PREFIXES"), "x-api-key");
    assert.equal(vars.get("ADMIN_PORT"), "9100");
    assert.equal(vars.get("APP_NAME"), "order-book-service");
    assert.doesNotMatch(env, /# ADMIN_PORT=|# JWT_SECRET=/);
    assert.equal(fs.statSync(path.join(out, ".env")).mode & 0o777, 0o600);
  });

  it("adds the non-secret choices to .env.example and no secret", () => {
    const example = fs.readFileSync(path.join(out, ".env.example"), "utf8");
    const vars = parseEnv(example);
    assert.equal(vars.get("ADMIN_PORT"), "9100");
    assert.equal(vars.get("HTTP_HEADER_PREFIXES"), "x-api-key");
    assert.doesNotMatch(example, /SECRET$|JWT_SECRET=.|API_KEYS=./m);
  });

  it("replaces the README choices block and titles it", () => {
    const readme = fs.readFileSync(path.join(out, "README.md"), "utf8");
    assert.match(readme, /^# order-book-service\n/);
    assert.doesNotMatch(readme, /create-grpc-svc:choices|placeholder/);
    assert.match(readme, /\*\*Auth:\*\* JWT \(HS256\) or API key/);
    assert.match(readme, /\*\*Admin port:\*\* 9100/);
  });
});

describe("rendering edge cases", () => {
  it("works without _gitignore, README.md or .env.example, still ignoring .env", async () => {
    const root = tmpDir();
    const t = path.join(root, "t");
    write(t, "package.json", '{"name":"example"}\n');
    write(t, "proto/example/v1/example.proto", "package example.v1;\n");
    const out = path.join(root, "out");
    await render({ templateDir: t, targetDir: out, names: deriveNames("demo-svc"), choices: { ...defaults, auth: "jwt" } });
    assert.deepEqual(listFiles(out), [".env", ".gitignore", "package.json", "proto/demo/v1/demo.proto"]);
    assert.equal(fs.readFileSync(path.join(out, ".gitignore"), "utf8"), ".env\nnode_modules/\n");
    assert.match(fs.readFileSync(path.join(out, ".env"), "utf8"), /^AUTH_REQUIRED=true\nJWT_SECRET=[A-Za-z0-9_-]{43}\n$/);
  });

  it("overwrites existing files (the --force case)", async () => {
    const root = tmpDir();
    const t = makeSyntheticTemplate(root);
    const out = path.join(root, "out");
    write(out, "package.json", "old\n");
    write(out, ".env", "OLD=1\n", 0o644);
    write(out, "keep.txt", "mine\n");
    await render({ templateDir: t, targetDir: out, names: deriveNames("demo-svc"), choices: defaults });
    assert.equal(JSON.parse(fs.readFileSync(path.join(out, "package.json"), "utf8")).name, "demo-svc");
    assert.doesNotMatch(fs.readFileSync(path.join(out, ".env"), "utf8"), /OLD=1/);
    assert.equal(fs.statSync(path.join(out, ".env")).mode & 0o777, 0o600);
    assert.equal(fs.readFileSync(path.join(out, "keep.txt"), "utf8"), "mine\n");
  });

  it("skips node_modules, dist, the benchmarks' dist-bench, src/gen, test/gen, .env, *.tgz, .tmp and coverage", () => {
    const t = makeSyntheticTemplate(tmpDir());
    write(t, "test/gen/gatewaytest/v1/library_pb.ts", "// generated from test/proto\n");
    const listed = listTemplateFiles(t);
    for (const f of listed) assert.doesNotMatch(f, /node_modules|^dist(-[^/]*)?\/|^src\/gen\/|^test\/gen\/|(^|\/)\.env$|\.tgz$|^\.tmp\/|^coverage\//);
    assert.ok(listed.includes(".env.example"));
  });
});

describe("locating the template", () => {
  it("finds the package root from generator/ and from dist/generator/", () => {
    assert.equal(findPackageRoot(path.join(REPO, "generator/render.ts")), REPO);
    assert.equal(findPackageRoot(path.join(REPO, "dist/generator/render.js")), REPO);
    assert.equal(defaultTemplateDir(), path.join(REPO, "template"));
  });

  it("fails clearly when the third-party protos were not gathered", () => {
    const t = path.join(tmpDir(), "t");
    write(t, "package.json", "{}\n");
    assert.throws(() => assertTemplateReady(t), /third-party protos were not gathered.*npm run protos/);
    write(t, "proto/google/api/http.proto", "//\n");
    assert.doesNotThrow(() => assertTemplateReady(t));
  });
});
