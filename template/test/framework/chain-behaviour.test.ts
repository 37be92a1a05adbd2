import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { Code } from "../../src/framework/index.js";
import { startTestServer } from "../../src/framework/testing/harness.js";
import { statusOf } from "../../src/framework/testing/status.js";
import { FixtureService } from "../gen/fixture/v1/fixture_pb.js";
import { fixtureService } from "./fixtures/fixture-service.js";

describe("default timeout", () => {
  test("a unary call without a deadline gets the default and ends DEADLINE_EXCEEDED (504 over HTTP)", async (t) => {
    const server = await startTestServer([fixtureService], { GRPC_SERVER_DEFAULT_TIMEOUT_IN_SECONDS: "0.2" });
    t.after(() => server.close());
    const client = server.client(FixtureService);
    assert.equal((await statusOf(client.echo({ message: "slow", delayMs: 5000 }))).code, Code.DEADLINE_EXCEEDED);
    const res = await fetch(`${server.httpUrl}/api/v1/echo`, {
      method: "POST",
      body: JSON.stringify({ message: "slow", delayMs: 5000 }),
      headers: { "content-type": "application/json" },
    });
    assert.equal(res.status, 504);
    assert.equal(((await res.json()) as { code: number }).code, Code.DEADLINE_EXCEEDED);
    assert.equal((await client.echo({ message: "fast" })).message, "fast", "calls within the deadline still succeed");
    const line = server.logs.find((l) => l.msg === "response time" && l.grpcCode === "DeadlineExceeded");
    assert.ok(line, "the timed-out call is logged with its code");
    assert.ok(!server.logs.some((l) => l.level === "error"), "an expired deadline is not a server error");
  });
});

describe("rate limit", () => {
  test("calls beyond the burst are RESOURCE_EXHAUSTED, and 429 with Retry-After over HTTP", async (t) => {
    const server = await startTestServer([fixtureService], { RATE_LIMIT_PER_SECOND: "0.5", RATE_LIMIT_BURST: "2" });
    t.after(() => server.close());
    const client = server.client(FixtureService);
    await client.echo({ message: "1" });
    await client.echo({ message: "2" });
    assert.equal((await statusOf(client.echo({ message: "3" }))).code, Code.RESOURCE_EXHAUSTED);
    const res = await fetch(`${server.httpUrl}/api/v1/echo/4`);
    assert.equal(res.status, 429);
    assert.equal(res.headers.get("retry-after"), "2");
    assert.equal(((await res.json()) as { code: number }).code, Code.RESOURCE_EXHAUSTED);
  });

  test("health checks are not rate limited", async (t) => {
    const server = await startTestServer([fixtureService], { RATE_LIMIT_PER_SECOND: "0.5", RATE_LIMIT_BURST: "1" });
    t.after(() => server.close());
    await server.client(FixtureService).echo({ message: "uses the only token" });
    for (let i = 0; i < 3; i++) assert.equal((await fetch(`${server.httpUrl}/readycheck`)).status, 200);
  });
});

describe("per-request debug logging", () => {
  test("debug: true, or the debug header, logs that call at debug; other calls stay at the global level", async (t) => {
    const server = await startTestServer([fixtureService], { LOG_LEVEL: "info" });
    t.after(() => server.close());
    const client = server.client(FixtureService);
    await client.echo({ message: "quiet", traceId: "quiet" });
    await client.echo({ message: "field", traceId: "by-field", debug: true });
    await client.echo({ message: "header", traceId: "by-header" }, { metadata: { "x-debug-log-level": "debug" } });
    const debugTraces = server.logs.filter((l) => l.level === "debug" && l.msg === "echo received").map((l) => l.trace);
    assert.deepEqual(debugTraces, ["by-field", "by-header"]);
  });

  test("DISABLE_DEBUG_LOG_INTERCEPTOR=true ignores the request's debug flag", async (t) => {
    const server = await startTestServer([fixtureService], { DISABLE_DEBUG_LOG_INTERCEPTOR: "true" });
    t.after(() => server.close());
    await server.client(FixtureService).echo({ message: "x", debug: true });
    assert.ok(!server.logs.some((l) => l.level === "debug"));
  });
});
