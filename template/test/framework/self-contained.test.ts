// The framework's own tests (src/framework/, test/framework/, test/system/) run against the test-only fixture
// service (test/proto/fixture/, test/framework/fixtures/), never against yours: your proto, handlers and
// src/main.ts are yours to change, and the framework suite must keep working whatever you do to them.
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { test } from "node:test";
import { ROOT, tsFiles, usesOfYourService } from "./support/service-imports.js";

test("the framework's tests use nothing of your service: not its handlers, its generated code nor src/main.ts", () => {
  const files = ["src/framework", "test/framework", "test/system"]
    .flatMap(tsFiles)
    .filter((f) => f !== "test/framework/self-contained.test.ts" && f !== "test/framework/support/service-imports.ts");
  assert.ok(files.length > 50, `found the framework's files (${files.length})`);
  const found = files.flatMap((f) => usesOfYourService(f, readFileSync(join(ROOT, f), "utf8")));
  assert.deepEqual(found, []);
});

test("the check finds an import of your service, your generated code and src/main.ts, and a process started from src/main.ts; it allows the vendored protos'", () => {
  const source = [
    'import { orders } from "../../src/service/orders-service.js";',
    'import { OrdersService } from "../../src/gen/orders/v1/orders_pb.js";',
    'const main = await import("../../src/main.js");',
    'import { Health } from "../../src/gen/grpc/health/v1/health_pb.js";',
    'import { FixtureService } from "../gen/fixture/v1/fixture_pb.js";',
    'import { Code } from "../../src/framework/index.js";',
    'const service = startServiceProcess("src/main.ts", {});',
    'const MAIN = "src/main.ts";',
    'for (const probe of ["src/main.ts", "/swagger/src/main.ts"]) {}',
  ].join("\n");
  assert.deepEqual(usesOfYourService("test/framework/x.test.ts", source), [
    "test/framework/x.test.ts imports ../../src/service/orders-service.js",
    "test/framework/x.test.ts imports ../../src/gen/orders/v1/orders_pb.js",
    "test/framework/x.test.ts imports ../../src/main.js",
    'test/framework/x.test.ts starts src/main.ts: ("src/main.ts"',
    'test/framework/x.test.ts starts src/main.ts: = "src/main.ts"',
  ]);
});
