// What a developer sees when the service starts: the configuration on one line (secrets redacted), then a
// "ready" line naming the addresses to use — each of which really answers.
import assert from "node:assert/strict";
import { after, describe, test } from "node:test";
import { createClient } from "../../src/framework/index.js";
import { startTestServer, type TestServer } from "../../src/framework/testing/harness.js";
import { Health } from "../../src/gen/grpc/health/v1/health_pb.js";
import { createLibrary } from "./gateway-library.js";

for (const admin of [false, true]) {
  describe(admin ? "with ADMIN_PORT" : "without an admin port", () => {
    let server: TestServer;
    after(() => server?.close());

    test("the ready line names the REST base, Swagger UI, the gRPC target, /metrics and /debug/pprof/, and each answers", async () => {
      server = await startTestServer([createLibrary().service], admin ? { ADMIN_PORT: "0" } : {});
      const ready = server.logs.find((l) => l.msg === "ready") as Record<string, string>;
      assert.ok(ready);
      assert.equal(ready.rest, server.httpUrl);
      const ops = admin ? server.adminUrl : server.httpUrl;
      assert.equal(ready.swaggerUi, `${ops}/swagger/`);
      assert.equal(ready.metrics, `${ops}/metrics`);
      assert.equal(ready.pprof, `${ops}/debug/pprof/`);
      assert.equal(ready.grpc, server.grpcAddress);

      const book = await fetch(`${ready.rest}/v1/shelves/s1/books/b1`);
      assert.equal(book.status, 200, "the REST base serves the gateway routes");
      const ui = await fetch(ready.swaggerUi as string);
      assert.equal(ui.status, 200);
      assert.match(await ui.text(), /swagger-ui/i);
      const metrics = await fetch(ready.metrics as string);
      assert.match(await metrics.text(), /^# HELP /m);
      assert.equal((await fetch(ready.pprof as string)).status, 200);
      const health = createClient(Health, ready.grpc as string, { maxAttempts: 1 });
      try {
        assert.equal((await health.check({})).status, 1, "SERVING over the named gRPC target");
      } finally {
        health.close();
      }
    });

    test("the configuration is one line of NAME=value (secrets redacted: src/framework/config/load.test.ts)", () => {
      const starting = server.logs.find((l) => l.msg === "starting");
      const config = starting?.config;
      assert.equal(typeof config, "string");
      assert.doesNotMatch(config as string, /\n/);
      assert.match(config as string, /(^| )LISTEN_HOST=127\.0\.0\.1( |$)/);
    });
  });
}
