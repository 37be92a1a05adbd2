import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { UsageError } from "../../generator/errors.js";
import { deriveNames, nameProblem } from "../../generator/names.js";

describe("name derivation", () => {
  const table: [name: string, stem: string, protoPackage: string, service: string][] = [
    ["demo-svc", "demo", "demo.v1", "DemoService"],
    ["payments-service", "payments", "payments.v1", "PaymentsService"],
    ["order-book-service", "orderbook", "orderbook.v1", "OrderBookService"],
    ["order-book", "orderbook", "orderbook.v1", "OrderBookService"],
    ["x", "x", "x.v1", "XService"],
    ["a1-b2", "a1b2", "a1b2.v1", "A1B2Service"],
    ["svc", "svc", "svc.v1", "SvcService"],
    ["my-svc-svc", "mysvc", "mysvc.v1", "MySvcService"],
    ["example", "example", "example.v1", "ExampleService"],
  ];
  for (const [name, stem, protoPackage, service] of table) {
    it(`derives ${protoPackage} and ${service} from ${name}`, () => {
      const n = deriveNames(name);
      assert.equal(n.name, name);
      assert.equal(n.stem, stem);
      assert.equal(n.protoPackage, protoPackage);
      assert.equal(n.service, service);
      assert.equal(n.upper, stem.toUpperCase());
      assert.equal(`${n.pascal}Service`, service);
    });
  }
});

describe("name rejection", () => {
  const bad: [name: string, reason: RegExp][] = [
    ["", /empty/],
    ["Demo-svc", /kebab/],
    ["demo_svc", /kebab/],
    ["demo--svc", /kebab/],
    ["-demo", /kebab/],
    ["demo-", /kebab/],
    ["1demo", /kebab/],
    ["demo svc", /kebab/],
    ["@scope/demo", /kebab/],
    ["a".repeat(215), /214/],
    ["google", /clashes/],
    ["grpc-svc", /clashes/],
    ["buf-service", /clashes/],
    ["grpcsvc", /clashes/],
    ["class-svc", /reserved/],
    ["http", /core module/],
    ["v1", /is a version/],
    ["v2beta1-svc", /is a version/],
  ];
  for (const [name, reason] of bad) {
    it(`rejects ${JSON.stringify(name.length > 20 ? `${name.slice(0, 10)}…(${name.length})` : name)}`, () => {
      assert.match(nameProblem(name) ?? "", reason);
      assert.throws(() => deriveNames(name), (e: unknown) => e instanceof UsageError && reason.test(e.message));
    });
  }

  it("accepts a name of exactly 214 characters", () => {
    assert.equal(nameProblem("a".repeat(214)), undefined);
  });
});
