import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { Code } from "../../src/framework/index.js";
import { startTestServer } from "../../src/framework/testing/harness.js";
import { FixtureService } from "../gen/fixture/v1/fixture_pb.js";
import { fixtureService } from "./fixtures/fixture-service.js";

const PROMETHEUS_TEXT = "text/plain; version=0.0.4; charset=utf-8";
const NOT_FOUND = { code: Code.NOT_FOUND, message: "Not Found", details: [] };

async function notFound(url: string): Promise<void> {
  const res = await fetch(url);
  assert.equal(res.status, 404, url);
  assert.match(res.headers.get("content-type") ?? "", /^application\/json/);
  assert.deepEqual(await res.json(), NOT_FOUND, url);
}

describe("admin port", () => {
  test("without ADMIN_PORT, /metrics and /debug/pprof/ are on the HTTP port", async (t) => {
    const server = await startTestServer([fixtureService]);
    t.after(() => server.close());
    assert.equal(server.adminUrl, undefined);
    const res = await fetch(`${server.httpUrl}/metrics`);
    assert.equal(res.status, 200);
    assert.equal(res.headers.get("content-type"), PROMETHEUS_TEXT);
    assert.equal((await fetch(`${server.httpUrl}/debug/pprof/`)).status, 200);
  });

  test("with ADMIN_PORT, the ops endpoints move there; the HTTP port answers 404 for them and keeps health and readiness", async (t) => {
    const server = await startTestServer([fixtureService], { ADMIN_PORT: "0" });
    t.after(() => server.close());
    assert.ok(server.adminUrl);
    assert.notEqual(server.adminUrl, server.httpUrl);

    const metrics = await fetch(`${server.adminUrl}/metrics`);
    assert.equal(metrics.status, 200);
    assert.equal(metrics.headers.get("content-type"), PROMETHEUS_TEXT);
    assert.match(await metrics.text(), /^grpc_server_started_total\{/m);
    assert.equal((await fetch(`${server.adminUrl}/debug/pprof/`)).status, 200);

    await notFound(`${server.httpUrl}/metrics`);
    await notFound(`${server.httpUrl}/debug/pprof/`);

    for (const path of ["/healthcheck", "/readycheck"]) {
      assert.equal((await fetch(`${server.httpUrl}${path}`)).status, 200, `${path} stays on the HTTP port`);
      await notFound(`${server.adminUrl}${path}`);
    }
    // The admin port serves no gateway either.
    await notFound(`${server.adminUrl}/api/v1/echo/hi`);
  });

  test("the admin port's /metrics counts the traffic of the HTTP and gRPC ports, not its own", async (t) => {
    const server = await startTestServer([fixtureService], { ADMIN_PORT: "0" });
    t.after(() => server.close());
    await server.client(FixtureService).echo({ message: "grpc" });
    assert.equal((await fetch(`${server.httpUrl}/metrics`)).status, 404);
    await fetch(`${server.adminUrl}/metrics`);
    const text = await (await fetch(`${server.adminUrl}/metrics`)).text();
    assert.match(
      text,
      /^grpc_server_handled_total\{grpc_type="unary",grpc_service="fixture.v1.FixtureService",grpc_method="Echo",grpc_code="OK"\} 1$/m,
    );
    assert.match(
      text,
      /^http_server_requests_total\{method="GET",route="unmatched",status_code="404"\} 1$/m,
      "the HTTP port's 404 for /metrics",
    );
    assert.doesNotMatch(text, /route="\/metrics"/);
  });

  test("DISABLE_PROMETHEUS=true with ADMIN_PORT: /metrics is 404 on both ports", async (t) => {
    const server = await startTestServer([fixtureService], { ADMIN_PORT: "0", DISABLE_PROMETHEUS: "true" });
    t.after(() => server.close());
    await notFound(`${server.adminUrl}/metrics`);
    await notFound(`${server.httpUrl}/metrics`);
  });

  describe("the start-up warning about public operational routes", () => {
    const secret = "admin-port-test-secret-0123456789abcdef";
    const apiKey = "admin-port-test-api-key";
    const warnings = (logs: Record<string, unknown>[]) => logs.filter((l) => l.level === "warn" && /ADMIN_PORT/.test(String(l.msg)));

    test("with auth on and no ADMIN_PORT: exactly one warn line names /metrics, /swagger/, /openapi/ and /debug/pprof/ and ADMIN_PORT, and no secret", async (t) => {
      const server = await startTestServer([fixtureService], { JWT_SECRET: secret, API_KEYS: apiKey });
      t.after(() => server.close());
      const lines = warnings(server.logs);
      assert.equal(lines.length, 1, JSON.stringify(lines));
      const line = lines[0]!;
      assert.deepEqual(line.publicPaths, ["/metrics", "/swagger/", "/openapi/", "/debug/pprof/"]);
      assert.match(
        String(line.msg),
        /^\/metrics, \/swagger\/, \/openapi\/, \/debug\/pprof\/ are served without authentication on the HTTP port: set ADMIN_PORT/,
      );
      const text = JSON.stringify(line);
      assert.ok(!text.includes(secret) && !text.includes(apiKey), "the line holds no secret");
      assert.ok(server.logs.indexOf(line) < server.logs.findIndex((l) => l.msg === "ready"), "logged before ready");
    });

    test("it names only what is served (DISABLE_PROMETHEUS, DISABLE_DEBUG) and comes with API keys alone too", async (t) => {
      const server = await startTestServer([fixtureService], { API_KEYS: apiKey, DISABLE_PROMETHEUS: "true", DISABLE_DEBUG: "true" });
      t.after(() => server.close());
      assert.deepEqual(
        warnings(server.logs).map((l) => l.publicPaths),
        [["/swagger/", "/openapi/"]],
      );
    });

    for (const [name, env] of [
      ["auth off", {}],
      ["ADMIN_PORT set", { JWT_SECRET: secret, ADMIN_PORT: "0" }],
    ] as const) {
      test(`no warning with ${name}`, async (t) => {
        const server = await startTestServer([fixtureService], env);
        t.after(() => server.close());
        assert.deepEqual(warnings(server.logs), []);
      });
    }
  });
});
