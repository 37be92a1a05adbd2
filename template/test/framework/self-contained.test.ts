// The framework's own tests (src/framework/, test/framework/, test/system/) and its benchmarks (bench/) run
// against the test-only fixture service (test/proto/fixture/, test/framework/fixtures/), never against
// yours: your proto, handlers and src/main.ts are yours to change, and the framework suite and `make bench`
// must keep working whatever you do to them.
import assert from "node:assert/strict";
import { readdirSync, readFileSync } from "node:fs";
import { join, relative, resolve } from "node:path";
import { test } from "node:test";

const ROOT = resolve(import.meta.dirname, "../..");
/** Generated code the framework may import: the vendored protos' (google/, grpc/), not your packages'. */
const VENDORED_GEN = /^src\/gen\/(google|grpc)\//;
/** Module specifiers in import/export statements and dynamic imports. */
const SPECIFIER = /(?:\bfrom\s*|\bimport\s*\(\s*|^\s*import\s+)["']([^"']+)["']/gm;

function tsFiles(dir: string): string[] {
  return readdirSync(join(ROOT, dir), { recursive: true, encoding: "utf8" })
    .filter((f) => f.endsWith(".ts"))
    .map((f) => join(dir, f));
}

/** What a framework file uses of your service: imports of src/service/, src/main.ts or your generated code, src/main.ts as a process. */
function usesOfYourService(file: string, source: string): string[] {
  const found: string[] = [];
  for (const [, spec] of source.matchAll(SPECIFIER)) {
    if (!spec?.startsWith(".")) continue;
    const target = relative(ROOT, resolve(ROOT, file, "..", spec)).replaceAll("\\", "/");
    if (target.startsWith("src/service/") || target === "src/main.js" || (target.startsWith("src/gen/") && !VENDORED_GEN.test(target))) {
      found.push(`${file} imports ${spec}`);
    }
  }
  // A process started from src/main.ts (startServiceProcess("src/main.ts"), or a constant holding it): the
  // tests start test/framework/fixtures/fixture-main.ts instead. (deploy-image builds src/main.ts on purpose,
  // through the Dockerfile, and names it only in lists of paths.)
  for (const [use] of source.matchAll(/(?:\(|=)\s*["'`]src\/main\.ts["'`]/g)) found.push(`${file} starts src/main.ts: ${use}`);
  return found;
}

test("the framework's tests use nothing of your service: not its handlers, its generated code nor src/main.ts", () => {
  const files = ["src/framework", "test/framework", "test/system"]
    .flatMap(tsFiles)
    .filter((f) => f !== "test/framework/self-contained.test.ts");
  assert.ok(files.length > 50, `found the framework's files (${files.length})`);
  const found = files.flatMap((f) => usesOfYourService(f, readFileSync(join(ROOT, f), "utf8")));
  assert.deepEqual(found, []);
});

test("the benchmarks (bench/) use nothing of your service either: they run the fixture service, so make bench keeps working when your proto changes", () => {
  const files = tsFiles("bench");
  assert.ok(files.includes(join("bench", "proto.ts")), `found the bench's files (${files.length})`);
  assert.match(readFileSync(join(ROOT, "bench/proto.ts"), "utf8"), /from "\.\.\/test\/gen\/fixture\/v1\/fixture_pb\.js"/);
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
