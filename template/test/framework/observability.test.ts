import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { Code } from "../../src/framework/index.js";
import { replicaName } from "../../src/framework/logging/logger.js";
import { startTestServer } from "../../src/framework/testing/harness.js";
import { statusOf } from "../../src/framework/testing/status.js";
import { FixtureService } from "../gen/fixture/v1/fixture_pb.js";
import { fixtureService } from "./fixtures/fixture-service.js";
import { exportSpansTo, receivedSpans, receiver } from "./support/otlp.js";

describe("error notification", () => {
  test("server errors (Internal, Unavailable…) are reported with the trace ID and stack; client errors are not", async (t) => {
    const server = await startTestServer([fixtureService]);
    t.after(() => server.close());
    const client = server.client(FixtureService);
    assert.equal((await statusOf(client.fail({ panic: true }, { metadata: { "x-trace-id": "boom-trace" } }))).code, Code.INTERNAL);
    assert.equal(
      (await statusOf(client.fail({ code: Code.UNAVAILABLE, message: "down" }, { metadata: { "x-trace-id": "down-trace" } }))).code,
      Code.UNAVAILABLE,
    );
    assert.equal(
      (await statusOf(client.fail({ code: Code.NOT_FOUND }, { metadata: { "x-trace-id": "client-trace" } }))).code,
      Code.NOT_FOUND,
    );
    await client.echo({ message: "flush" }); // reports go out on the next turn of the event loop
    await new Promise((resolve) => setImmediate(resolve));
    const reports = server.logs.filter((l) => l.msg === "server error reported");
    assert.deepEqual(reports.map((r) => r.trace).sort(), ["boom-trace", "down-trace"]);
    const boom = reports.find((r) => r.trace === "boom-trace")!;
    assert.match(JSON.stringify(boom.err), /panic requested by Fail/);
    assert.match(JSON.stringify(boom.err), /fixture-service\.ts/, "with the original stack");
    assert.equal(boom.grpcMethod, "/fixture.v1.FixtureService/Fail");
  });

  test("with SENTRY_DSN the report reaches Sentry's envelope endpoint with the trace ID as a tag", async (t) => {
    const sentry = await receiver();
    t.after(() => sentry.close());
    const server = await startTestServer([fixtureService], { SENTRY_DSN: `http://publickey@127.0.0.1:${sentry.port}/42` });
    t.after(() => server.close());
    await statusOf(server.client(FixtureService).fail({ panic: true }, { metadata: { "x-trace-id": "sentry-trace" } }));
    const envelope = await sentry.waitFor((b) => b.url.startsWith("/api/42/envelope/"));
    const text = envelope.body.toString();
    assert.match(text, /panic requested by Fail/);
    assert.match(text, /"trace_id":"sentry-trace"/);
    assert.match(text, /"grpc_method":"\/fixture.v1.FixtureService\/Fail"/);
  });
});

describe("tracing", () => {
  test("with an OTLP endpoint, each call is a server span continuing the caller's traceparent, with framework.trace_id", async (t) => {
    const otlp = await exportSpansTo(t, "tracing-test");
    const server = await startTestServer([fixtureService]);
    t.after(() => server.close());
    const parentTrace = "4bf92f3577b34da6a3ce929d0e0e4736";
    await server
      .client(FixtureService)
      .echo({ message: "traced" }, { metadata: { traceparent: `00-${parentTrace}-00f067aa0ba902b7-01`, "x-trace-id": "otel-trace" } });
    const res = await fetch(`${server.httpUrl}/api/v1/echo/via-http`, {
      headers: { traceparent: `00-${parentTrace}-00f067aa0ba902b8-01` },
    });
    assert.equal(res.status, 200);
    const allSpans = () => receivedSpans(otlp);
    await otlp.waitFor(() => allSpans().filter((s) => s.name === "fixture.v1.FixtureService/Echo").length >= 2);
    const spans = allSpans().filter((s) => s.name === "fixture.v1.FixtureService/Echo");
    for (const span of spans) {
      assert.equal(span.traceId, parentTrace);
      assert.equal(span.kind, 2, "SPAN_KIND_SERVER");
    }
    const grpcSpan = spans.find((s) => s.attributes.some((a) => a.key === "framework.trace_id" && a.value.stringValue === "otel-trace"));
    assert.ok(grpcSpan, "framework.trace_id attribute");
  });

  test("a traced call's log lines carry the exported span's trace_id and span_id; an OpenMetrics scrape has it as the latency exemplar", async (t) => {
    const otlp = await exportSpansTo(t, "fleet-test");
    const server = await startTestServer([fixtureService]);
    t.after(() => server.close());
    // debug: the handler's own line too ("echo received"), besides the response-time line.
    await server.client(FixtureService).echo({ message: "traced", debug: true, traceId: "fleet-trace" });
    const spans = () => receivedSpans(otlp);
    await otlp.waitFor(() => spans().some((sp) => sp.name === "fixture.v1.FixtureService/Echo"));
    const span = spans().find((sp) => sp.name === "fixture.v1.FixtureService/Echo")!;
    assert.match(span.traceId, /^[0-9a-f]{32}$/);
    assert.match(span.spanId, /^[0-9a-f]{16}$/);

    const lines = server.logs.filter((l) => l.trace === "fleet-trace");
    assert.deepEqual(lines.map((l) => l.msg).sort(), ["echo received", "response time"]);
    for (const line of lines) {
      assert.equal(line.trace_id, span.traceId, String(line.msg));
      assert.equal(line.span_id, span.spanId, String(line.msg));
      assert.equal(line.replica, replicaName(), String(line.msg));
    }

    const om = await fetch(`${server.httpUrl}/metrics`, {
      headers: { accept: "application/openmetrics-text;version=1.0.0,text/plain;version=0.0.4;q=0.5,*/*;q=0.1" },
    });
    assert.match(om.headers.get("content-type") ?? "", /^application\/openmetrics-text; version=1\.0\.0/);
    const text = await om.text();
    assert.ok(text.endsWith("# EOF\n"));
    const exemplar = new RegExp(
      `^grpc_server_handling_seconds_bucket\\{[^}]*grpc_method="Echo"[^}]*\\} 1 # \\{trace_id="${span.traceId}",span_id="${span.spanId}"\\} [0-9.e-]+ [0-9.]+$`,
      "m",
    );
    assert.match(text, exemplar);
    assert.match(text, /^# TYPE grpc_server_started counter$/m);
    assert.match(text, /^grpc_server_started_total\{[^}]*grpc_method="Echo"[^}]*\} 1$/m);
    // The Prometheus text format is as before, without exemplars.
    const plain = await (await fetch(`${server.httpUrl}/metrics`)).text();
    assert.match(plain, /^# TYPE grpc_server_started_total counter$/m);
    assert.doesNotMatch(plain, /trace_id=/);
  });

  test("without an OTLP endpoint the tracing interceptor is not in the chain", async (t) => {
    const server = await startTestServer([fixtureService]);
    t.after(() => server.close());
    assert.ok(!server.app.interceptorNames().includes("tracing"));
  });
});
