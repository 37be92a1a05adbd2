import assert from "node:assert/strict";
import { readdirSync, readFileSync } from "node:fs";
import { describe, it } from "node:test";
import { deriveNames } from "../../generator/names.js";
import { renameContent, renamePath, renameTokens } from "../../generator/rename.js";

const demo = deriveNames("demo-svc");
const book = deriveNames("order-book-service");

describe("path renaming", () => {
  it("renames the proto directory and file to the stem", () => {
    assert.equal(renamePath("proto/example/v1/example.proto", demo), "proto/demo/v1/demo.proto");
    assert.equal(renamePath("src/gen/example/v1/example_pb.ts", book), "src/gen/orderbook/v1/orderbook_pb.ts");
  });

  it("never renames .env.example or other names of the env template", () => {
    assert.equal(renamePath(".env.example", demo), ".env.example");
    assert.equal(renamePath("docs/.env.example", demo), "docs/.env.example");
    assert.equal(renamePath("scripts/env-example.ts", demo), "scripts/env-example.ts");
  });

  it("leaves the vendored third-party protos alone", () => {
    assert.equal(renamePath("proto/google/api/http.proto", demo), "proto/google/api/http.proto");
  });

  it("leaves words that merely contain example", () => {
    assert.equal(renamePath("docs/examples/counterexample.md", demo), "docs/examples/counterexample.md");
  });
});

describe("content renaming", () => {
  it("renames tokens separated by _ . / - and quotes", () => {
    assert.equal(
      renameTokens('import { file_example_v1_example } from "./gen/example/v1/example_pb.js"; package example.v1;', book),
      'import { file_orderbook_v1_orderbook } from "./gen/orderbook/v1/orderbook_pb.js"; package orderbook.v1;',
    );
  });

  it("renames PascalCase compounds and upper-case constants", () => {
    assert.equal(
      renameTokens("ExampleService ExampleServiceHandlers Example EXAMPLE_LIMIT exampleClient", book),
      "OrderBookService OrderBookServiceHandlers OrderBook ORDERBOOK_LIMIT orderbookClient",
    );
  });

  it("keeps .env.example references and longer words", () => {
    const text = "cp .env.example .env # examples, counterexample, Examples, EXAMPLES, envExample(), ENV_EXAMPLE, env-example.ts";
    assert.equal(renameTokens(text, demo), text);
  });

  it("gives APP_NAME the full package name", () => {
    assert.equal(renameTokens("APP_NAME=example\n", demo), "APP_NAME=demo-svc\n");
  });

  it("gives make sdk's package the full package name: example-client", () => {
    assert.equal(
      renameTokens('import { ExampleService } from "example-client/node"; // sdk/example-client-0.1.0.tgz', demo),
      'import { DemoService } from "demo-svc-client/node"; // sdk/demo-svc-client-0.1.0.tgz',
    );
  });

  it("uses the full name for Kubernetes and Grafana names under deploy/, the stem for the proto package", () => {
    const yaml = 'name: example\nimage: example:latest\nexpr: grpc_service="example.v1.ExampleService"\n';
    assert.equal(
      renameContent("deploy/k8s/deployment.yaml", yaml, book),
      'name: order-book-service\nimage: order-book-service:latest\nexpr: grpc_service="orderbook.v1.OrderBookService"\n',
    );
  });

  it("keeps Grafana's {{instance}} legends (nothing is rendered through Handlebars)", () => {
    const json = '{"legendFormat":"{{instance}} {{grpc_method}}"}';
    assert.equal(renameContent("deploy/grafana/dashboard.json", json, demo), json);
  });

  it("renames the sample service in every page of the template's docs/ as in the README", () => {
    const docs = new URL("../../template/docs/", import.meta.url);
    const pages = readdirSync(docs).filter((f) => f.endsWith(".md"));
    assert.ok(pages.length >= 7, "the manual's pages");
    for (const page of pages) {
      const out = renameContent(`docs/${page}`, readFileSync(new URL(page, docs), "utf8"), demo);
      // Whatever is left is the env template's name (.env.example) or a reserved example domain, never the service's.
      const left = out.replace(/\.env\.example|\bexample\.(?:com|net|org)\b/g, "").match(/(?<![A-Za-z0-9])(?:example|Example|EXAMPLE)(?![a-z0-9])/g);
      assert.equal(left, null, `docs/${page} keeps ${left?.join(", ")}`);
    }
    const protocols = renameContent("docs/protocols.md", readFileSync(new URL("protocols.md", docs), "utf8"), demo);
    assert.match(protocols, /http:\/\/localhost:9090\/demo\.v1\.DemoService\/Sum/);
  });

  it("never turns a reserved example domain into a real one, whatever the new name", () => {
    const stripe = deriveNames("stripe");
    const text = "https://app.example.com, idp.example.com/realms/acme, ops@example.org, example.net, https://api.example:8443, example.v1";
    assert.equal(
      renameTokens(text, stripe),
      "https://app.example.com, idp.example.com/realms/acme, ops@example.org, example.net, https://api.example:8443, stripe.v1",
    );
    // Every shipped text that names a host keeps the reserved one: the README, the docs, the config messages.
    const template = new URL("../../template/", import.meta.url);
    const pages = readdirSync(new URL("docs/", template)).filter((f) => f.endsWith(".md"));
    for (const rel of ["README.md", "src/framework/config/parsers.ts", ...pages.map((f) => `docs/${f}`)]) {
      const out = renameContent(rel, readFileSync(new URL(rel, template), "utf8"), stripe);
      assert.doesNotMatch(out, /stripe\.(?:com|net|org)\b|[a-z0-9-]\.stripe\b/, rel);
    }
  });

  it("titles the README with the full name", () => {
    assert.equal(renameContent("README.md", "# example\n\nThe example API.\n", demo), "# demo-svc\n\nThe demo API.\n");
  });

  it("edits package.json as JSON: name, description and scripts, 2-space indent and trailing newline", () => {
    const pkg = {
      name: "example",
      description: "example: a gRPC service",
      scripts: { gen: "buf generate proto/example" },
      dependencies: { "example-lib": "1.0.0" },
    };
    const out = renameContent("package.json", JSON.stringify(pkg), demo);
    assert.equal(out, `${JSON.stringify({
      name: "demo-svc",
      description: "demo-svc: a gRPC service",
      scripts: { gen: "buf generate proto/demo" },
      dependencies: { "example-lib": "1.0.0" },
    }, null, 2)}\n`);
  });

  it("renames only the root package in package-lock.json", () => {
    const lock = { name: "example", packages: { "": { name: "example" }, "node_modules/example-lib": { name: "example-lib" } } };
    const out = JSON.parse(renameContent("package-lock.json", JSON.stringify(lock), demo));
    assert.equal(out.name, "demo-svc");
    assert.equal(out.packages[""].name, "demo-svc");
    assert.equal(out.packages["node_modules/example-lib"].name, "example-lib");
  });

  it("copies vendored protos verbatim", () => {
    const text = "// For example, see Example below.\n";
    assert.equal(renameContent("proto/google/api/http.proto", text, demo), text);
    assert.equal(renameContent("proto/grpcsvc/v1/options.proto", text, demo), text, "the framework's own options");
    assert.equal(renamePath("proto/grpcsvc/v1/options.proto", demo), "proto/grpcsvc/v1/options.proto");
  });
});

describe("the framework suite's fixture service", () => {
  // The framework's tests run against test/proto/fixture/, not the service in proto/: they keep its names in every
  // generated repository, so `make test-framework` passes whatever the user does to their own service.
  it("keeps its paths and content in a renamed repository", () => {
    for (const rel of [
      "test/proto/fixture/v1/fixture.proto",
      "test/framework/fixtures/fixture-service.ts",
      "test/framework/fixtures/fixture-main.ts",
      "test/proto/authrules/v1/rules.proto",
      "test/framework/fixtures/rules-services.ts",
    ]) {
      const text = readFileSync(new URL(`../../template/${rel}`, import.meta.url), "utf8");
      for (const n of [demo, book]) {
        assert.equal(renamePath(rel, n), rel);
        assert.equal(renameContent(rel, text, n), text, `${rel} is unchanged for ${n.name}`);
      }
    }
  });
});
