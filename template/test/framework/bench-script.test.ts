// scripts/bench.ts (`make bench` in a generated repo) finds the repo's own services in the generated code, turns
// each unary method's google.api.http rule into a request wrk can send, and prints each figure beside the
// baseline's. Tried here on the framework's test protos (test/gen/), never on the service's own.
import assert from "node:assert/strict";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { test } from "node:test";
import { comparison, httpRoute, ownServices } from "../../scripts/bench.js";

const TEST_GEN = path.resolve(import.meta.dirname, "../gen");

test("the services are those of the repo's own protos, found by folder: a grpc.* package in the repo's own folder counts", async () => {
  const names = (await ownServices(TEST_GEN)).map((s) => s.typeName);
  assert.ok(names.includes("fixture.v1.FixtureService"), names.join(", "));
  // The interop protos keep package grpc.testing but live in the framework's own folder (grpcsvc_test/).
  assert.ok(names.includes("grpc.testing.TestService"), names.join(", "));
});

test("the vendored folders (grpc/, google/, buf/) are left out without being imported", async () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "bench-vendored-"));
  try {
    for (const f of ["grpc/health/v1/health_pb.ts", "google/api/http_pb.ts", "buf/validate/validate_pb.ts"]) {
      fs.mkdirSync(path.dirname(path.join(dir, f)), { recursive: true });
      fs.writeFileSync(path.join(dir, f), 'throw new Error("a vendored file was imported");\n');
    }
    assert.deepEqual(await ownServices(dir), []);
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
});

test("a method's first HTTP binding becomes a verb, a path filled from the request, and the body its rule names", async () => {
  const fixture = (await ownServices(TEST_GEN)).find((s) => s.typeName === "fixture.v1.FixtureService");
  const echo = fixture?.methods.find((m) => m.name === "Echo");
  assert.ok(echo);
  assert.deepEqual(httpRoute(echo, { message: "hi" }), { verb: "POST", path: "/api/v1/echo", body: '{"message":"hi"}' });
  const countdown = fixture?.methods.find((m) => m.name === "Countdown");
  assert.ok(countdown);
  assert.deepEqual(httpRoute(countdown, { from: 3 }), { verb: "GET", path: "/api/v1/countdown/3", body: undefined });
  assert.deepEqual(
    httpRoute(countdown, {}),
    { verb: "GET", path: "/api/v1/countdown/x", body: undefined },
    "a missing path field is filled",
  );
});

test("each figure is printed beside the baseline's as a ratio; a row the baseline lacks has none", () => {
  const rows = [
    { name: "gRPC a.v1.A/Get", rps: 2000, p50Ms: 1, p99Ms: 4, errors: 0 },
    { name: "HTTP GET /a", rps: 1000, p50Ms: 2, p99Ms: 8, errors: 3 },
  ];
  const out = comparison(rows, [{ name: "gRPC a.v1.A/Get", rps: 1000, p50Ms: 2, p99Ms: 4, errors: 0 }]);
  assert.match(out, /^gRPC a\.v1\.A\/Get\s+2000 \(2\.00x\)\s+1\.00 \(0\.50x\)\s+4\.00 \(1\.00x\)\s+0$/m);
  assert.match(out, /^HTTP GET \/a\s+1000\s+2\.00\s+8\.00\s+3$/m);
});
