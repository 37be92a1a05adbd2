// Where the framework is developed (the create-grpc-svc repository), its benchmarks (bench/) run the fixture
// service too, so they keep working whatever the template's own service becomes. Left out of generated repos
// with bench/ (framework-dev.json).
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { test } from "node:test";
import { ROOT, tsFiles, usesOfYourService } from "./support/service-imports.js";

test("the benchmarks (bench/) use nothing of your service either: they run the fixture service, so make bench keeps working when your proto changes", () => {
  const files = tsFiles("bench");
  assert.ok(files.includes(join("bench", "proto.ts")), `found the bench's files (${files.length})`);
  assert.match(readFileSync(join(ROOT, "bench/proto.ts"), "utf8"), /from "\.\.\/test\/gen\/fixture\/v1\/fixture_pb\.js"/);
  const found = files.flatMap((f) => usesOfYourService(f, readFileSync(join(ROOT, f), "utf8")));
  assert.deepEqual(found, []);
});
