import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { readPackageJson } from "../src/framework/health/build-info.js";
import { Code } from "../src/framework/index.js";
import { startTestServer, type TestServer } from "../src/framework/testing/harness.js";
import { statusOf } from "../src/framework/testing/status.js";
import { ExampleService } from "../src/gen/example/v1/example_pb.js";
import { Health, HealthCheckResponse_ServingStatus } from "../src/gen/grpc/health/v1/health_pb.js";
import { exampleService } from "../src/service/example-service.js";

function post(server: TestServer, path: string, body: unknown, headers: Record<string, string> = {}) {
  return fetch(`${server.httpUrl}${path}`, {
    method: "POST",
    headers: { "content-type": "application/json", ...headers },
    body: typeof body === "string" ? body : JSON.stringify(body),
  });
}

describe("over gRPC", () => {
  let server: TestServer;
  let client: ReturnType<TestServer["client"]>;
  before(async () => {
    server = await startTestServer([exampleService]);
    client = server.client(ExampleService);
  });
  after(() => server.close());

  test("Echo returns the message and the trace ID it was given", async () => {
    const res = await client.echo({ message: "hi", traceId: "trace-1" });
    assert.equal(res.message, "hi");
    assert.equal(res.traceId, "trace-1");
    assert.ok(res.receivedAt && res.receivedAt.seconds > 0n);
  });

  test("Echo takes the trace ID from the x-trace-id metadata, else generates one", async () => {
    assert.equal((await client.echo({ message: "a" }, { metadata: { "x-trace-id": "from-header" } })).traceId, "from-header");
    const generated = (await client.echo({ message: "a" })).traceId;
    assert.match(generated, /^[0-9a-f-]{36}$/);
  });

  test("Countdown streams from..1", async () => {
    const seen: number[] = [];
    for await (const m of client.countdown({ from: 4 })) seen.push(m.remaining);
    assert.deepEqual(seen, [4, 3, 2, 1]);
  });

  test("Fail returns the requested status", async () => {
    const err = await statusOf(client.fail({ code: Code.NOT_FOUND, message: "no such thing" }));
    assert.equal(err.code, Code.NOT_FOUND);
    assert.equal(err.details, "no such thing");
    assert.deepEqual(await client.fail({ code: 0 }), await client.fail({}));
  });

  test("a handler that throws becomes INTERNAL 'internal error' and the server keeps serving", async () => {
    const err = await statusOf(client.fail({ panic: true }));
    assert.equal(err.code, Code.INTERNAL);
    assert.equal(err.details, "internal error");
    assert.ok(server.logs.some((l) => l.level === "error" && JSON.stringify(l.err).includes("panic requested by Fail")));
    assert.equal((await client.echo({ message: "still here" })).message, "still here");
  });

  test("an invalid request is INVALID_ARGUMENT naming the field", async () => {
    const err = await statusOf(client.echo({ message: "" }));
    assert.equal(err.code, Code.INVALID_ARGUMENT);
    assert.match(err.details, /^message: /);
    assert.equal((await statusOf(client.countdown({ from: 1001 })[Symbol.asyncIterator]().next())).code, Code.INVALID_ARGUMENT);
  });

  test("health answers SERVING for the server and the service, NOT_FOUND for unknown names", async () => {
    const health = server.client(Health);
    assert.equal((await health.check({})).status, HealthCheckResponse_ServingStatus.SERVING);
    assert.equal((await health.check({ service: "example.v1.ExampleService" })).status, HealthCheckResponse_ServingStatus.SERVING);
    assert.equal((await statusOf(health.check({ service: "nope.v1.Nope" }))).code, Code.NOT_FOUND);
  });

  test("every call writes one response-time line with method, code, duration and trace", async () => {
    await client.echo({ message: "logged", traceId: "log-trace" });
    const line = server.logs.find((l) => l.msg === "response time" && l.trace === "log-trace");
    assert.ok(line, "response-time line");
    assert.equal(line.grpcMethod, "/example.v1.ExampleService/Echo");
    assert.equal(line.grpcCode, "OK");
    assert.equal(typeof line.took_ms, "number");
    assert.match(String(line["@timestamp"]), /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/);
  });
});

for (const mode of ["tcp", "unix", "in-process"] as const) {
  describe(`over HTTP (gateway mode ${mode})`, () => {
    let server: TestServer;
    before(async () => {
      server = await startTestServer([exampleService], { GATEWAY_MODE: mode });
      assert.ok(
        server.logs.some((l) => l.msg === "ready" && l.gatewayMode === mode),
        `serving in ${mode} mode`,
      );
    });
    after(() => server.close());

    test("POST /api/v1/echo answers canonical JSON with zero values and echoes the trace header", async () => {
      const res = await post(server, "/api/v1/echo", { message: "hi" }, { "x-trace-id": "http-trace" });
      assert.equal(res.status, 200);
      assert.match(res.headers.get("content-type") ?? "", /^application\/json/);
      assert.equal(res.headers.get("x-trace-id"), "http-trace");
      const body = (await res.json()) as Record<string, unknown>;
      assert.deepEqual(Object.keys(body).sort(), ["message", "receivedAt", "traceId"]);
      assert.equal(body.message, "hi");
      assert.equal(body.traceId, "http-trace");
    });

    test("the body accepts proto field names too, and ignores unknown fields", async () => {
      const res = await post(server, "/api/v1/echo", { message: "x", trace_id: "snake", nope: 1 });
      assert.equal(res.status, 200);
      assert.equal(((await res.json()) as { traceId: string }).traceId, "snake");
    });

    test("GET /api/v1/echo/{message} decodes the path variable", async () => {
      const res = await fetch(`${server.httpUrl}/api/v1/echo/hello%20w%C3%B6rld%2Fx`);
      assert.equal(res.status, 200);
      assert.equal(((await res.json()) as { message: string }).message, "hello wörld/x");
    });

    test("GET /api/v1/countdown/{from} streams newline-delimited JSON results", async () => {
      const res = await fetch(`${server.httpUrl}/api/v1/countdown/3`);
      assert.equal(res.status, 200);
      const lines = (await res.text())
        .trim()
        .split("\n")
        .map((l) => JSON.parse(l));
      assert.deepEqual(lines, [{ result: { remaining: 3 } }, { result: { remaining: 2 } }, { result: { remaining: 1 } }]);
    });

    test("POST /api/v1/countdown takes the request from the body", async () => {
      const res = await post(server, "/api/v1/countdown", { from: 2 });
      assert.deepEqual(
        (await res.text())
          .trim()
          .split("\n")
          .map((l) => JSON.parse(l)),
        [{ result: { remaining: 2 } }, { result: { remaining: 1 } }],
      );
    });

    test("an invalid stream request fails before the first message with the code's HTTP status", async () => {
      const res = await fetch(`${server.httpUrl}/api/v1/countdown/0`);
      assert.equal(res.status, 400);
      assert.equal(((await res.json()) as { code: number }).code, Code.INVALID_ARGUMENT);
    });

    test("gRPC errors map to HTTP statuses with a {code,message,details} body", async () => {
      const cases: [number, number][] = [
        [Code.NOT_FOUND, 404],
        [Code.PERMISSION_DENIED, 403],
        [Code.UNAVAILABLE, 503],
        [Code.FAILED_PRECONDITION, 400],
        [Code.CANCELLED, 499],
      ];
      for (const [code, status] of cases) {
        const res = await post(server, "/api/v1/fail", { code, message: `code ${code}` });
        assert.equal(res.status, status, `code ${code}`);
        assert.deepEqual(await res.json(), { code, message: `code ${code}`, details: [] });
      }
      const unauth = await post(server, "/api/v1/fail", { code: Code.UNAUTHENTICATED, message: "who?" });
      assert.equal(unauth.status, 401);
      assert.equal(unauth.headers.get("www-authenticate"), "Bearer");
    });

    test("a validation failure is 400 with a google.rpc.BadRequest detail", async () => {
      const res = await post(server, "/api/v1/echo", { message: "" });
      assert.equal(res.status, 400);
      const body = (await res.json()) as { code: number; details: Record<string, unknown>[] };
      assert.equal(body.code, Code.INVALID_ARGUMENT);
      assert.deepEqual(body.details, [
        {
          "@type": "type.googleapis.com/google.rpc.BadRequest",
          fieldViolations: [{ field: "message", description: "must be at least 1 characters" }],
        },
      ]);
    });

    test("a panicking handler is 500 'internal error' without the original message", async () => {
      const res = await post(server, "/api/v1/fail", { panic: true });
      assert.equal(res.status, 500);
      assert.deepEqual(await res.json(), { code: Code.INTERNAL, message: "internal error", details: [] });
    });

    test("malformed JSON and wrong field types are 400 code 3 naming the problem", async () => {
      const malformed = await post(server, "/api/v1/echo", '{"message":');
      assert.equal(malformed.status, 400);
      assert.equal(((await malformed.json()) as { code: number }).code, Code.INVALID_ARGUMENT);
      const wrongType = await post(server, "/api/v1/echo", { message: "x", delayMs: "soon" });
      assert.equal(wrongType.status, 400);
      assert.match(((await wrongType.json()) as { message: string }).message, /delay_ms/);
    });

    test("the empty body is accepted on body '*' routes", async () => {
      const res = await post(server, "/api/v1/fail", "");
      assert.equal(res.status, 200);
      assert.deepEqual(await res.json(), {});
    });

    test("unknown paths are 404 code 5 and known paths with the wrong method are 405 code 12 with Allow", async () => {
      const missing = await fetch(`${server.httpUrl}/api/v1/nothing`);
      assert.equal(missing.status, 404);
      assert.deepEqual(await missing.json(), { code: Code.NOT_FOUND, message: "Not Found", details: [] });
      const wrong = await fetch(`${server.httpUrl}/api/v1/fail`, { method: "DELETE" });
      assert.equal(wrong.status, 405);
      assert.equal(wrong.headers.get("allow"), "POST");
      assert.equal(((await wrong.json()) as { code: number }).code, Code.UNIMPLEMENTED);
    });

    test("a body over GRPC_MAX_RECV_MSG_SIZE is 413 code 8", async () => {
      const res = await post(server, "/api/v1/echo", { message: "x".repeat(4 * 1024 * 1024 + 1) });
      assert.equal(res.status, 413);
      assert.equal(((await res.json()) as { code: number }).code, Code.RESOURCE_EXHAUSTED);
    });

    test("/healthcheck and /readycheck return the build metadata", async () => {
      for (const path of ["/healthcheck", "/readycheck"]) {
        const res = await fetch(`${server.httpUrl}${path}`);
        assert.equal(res.status, 200);
        const body = (await res.json()) as Record<string, unknown>;
        assert.deepEqual(Object.keys(body).sort(), ["app", "branch", "build_date", "git_commit", "node_version", "os_arch", "version"]);
        assert.equal(body.app, readPackageJson().name);
        assert.ok(Object.values(body).every((v) => typeof v === "string"));
      }
    });

    test("gateway calls log their HTTP path next to the gRPC method", async () => {
      await post(server, "/api/v1/echo", { message: "x", traceId: `path-${mode}` });
      const line = server.logs.find((l) => l.msg === "response time" && l.trace === `path-${mode}`);
      assert.equal(line?.httpPath, "/api/v1/echo");
      assert.equal(line?.grpcMethod, "/example.v1.ExampleService/Echo");
    });
  });
}

test("/readycheck is 503 with a Status body from the start of shutdown", async () => {
  const server = await startTestServer([exampleService], { GRPC_GRACEFUL_DURATION_IN_SECONDS: "0.3" });
  const stopping = server.close();
  const res = await fetch(`${server.httpUrl}/readycheck`);
  assert.equal(res.status, 503);
  assert.deepEqual(await res.json(), { code: Code.UNAVAILABLE, message: "not ready", details: [] });
  await stopping;
});
