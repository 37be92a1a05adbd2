/** The real promtool (Debian's prometheus package, installed by CI) accepts the real /metrics output. */
import assert from "node:assert/strict";
import { spawn, spawnSync } from "node:child_process";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { test } from "node:test";
import { Code } from "../../src/framework/index.js";
import { startTestServer } from "../../src/framework/testing/harness.js";
import { statusOf } from "../../src/framework/testing/status.js";
import { fixtureService } from "../framework/fixtures/fixture-service.js";
import { exportSpansTo } from "../framework/support/otlp.js";
import { FixtureService } from "../gen/fixture/v1/fixture_pb.js";

/** `promtool check metrics` reading the exposition on stdin, as Prometheus' own lint does. */
function promtool(text: string): Promise<{ code: number | null; output: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn("promtool", ["check", "metrics"], { stdio: ["pipe", "pipe", "pipe"] });
    let output = "";
    child.stdout.on("data", (d) => (output += d));
    child.stderr.on("data", (d) => (output += d));
    child.on("error", (err) =>
      reject(new Error(`promtool is missing: the system tests need Debian's prometheus package (${err.message})`)),
    );
    child.on("close", (code) => resolve({ code, output }));
    child.stdin.end(text);
  });
}

test("promtool check metrics accepts the real output, after traffic of every shape", async (t) => {
  const server = await startTestServer([fixtureService]);
  t.after(() => server.close());
  const client = server.client(FixtureService);
  await client.echo({ message: "hi" });
  await statusOf(client.fail({ code: Code.INVALID_ARGUMENT }));
  for await (const _ of client.countdown({ from: 2 })) {
    // drain the stream
  }
  // Outbound client metrics (grpc_client_*): the service calling itself, one call retried.
  const outbound = server.app.createClient(FixtureService, server.grpcAddress, { maxAttempts: 2 });
  t.after(() => outbound.close());
  await outbound.echo({ message: "out" });
  await statusOf(outbound.fail({ code: Code.UNAVAILABLE }));
  for await (const _ of outbound.countdown({ from: 2 })) {
    // drain the stream
  }
  await (await fetch(`${server.httpUrl}/api/v1/echo/x`)).text();
  await (await fetch(`${server.httpUrl}/no/such/route`)).text();
  const res = await fetch(`${server.httpUrl}/metrics`);
  assert.equal(res.status, 200);
  const text = await res.text();
  assert.match(text, /^grpc_client_retries_total\{.*grpc_method="Fail"\} 1$/m, "client series are in the checked output");
  const { code, output } = await promtool(text);
  assert.equal(output, "", "no findings");
  assert.equal(code, 0);
});

test("promtool check metrics accepts the output after auth and rate-limit rejections", async (t) => {
  const server = await startTestServer([fixtureService], {
    JWT_SECRET: "promtool-test-secret-0123456789abcdef",
    RATE_LIMIT_PER_SECOND: "0.01",
    RATE_LIMIT_BURST: "1",
  });
  t.after(() => server.close());
  const client = server.client(FixtureService);
  assert.equal((await statusOf(client.echo({ message: "no token" }))).code, Code.UNAUTHENTICATED);
  assert.equal(
    (await statusOf(client.echo({ message: "bad" }, { metadata: { authorization: "Bearer a, Bearer b" } }))).code,
    Code.UNAUTHENTICATED,
  );
  for await (const _ of client.countdown({ from: 1 })) {
    // public (the service's override): takes the only rate-limit token
  }
  assert.equal((await statusOf(client.countdown({ from: 1 })[Symbol.asyncIterator]().next())).code, Code.RESOURCE_EXHAUSTED);
  const text = await (await fetch(`${server.httpUrl}/metrics`)).text();
  assert.match(text, /^grpc_server_unauthenticated_total\{.*grpc_method="Echo",reason="missing"\} 1$/m);
  assert.match(text, /^grpc_server_unauthenticated_total\{.*grpc_method="Echo",reason="repeated"\} 1$/m);
  assert.match(text, /^grpc_server_handled_total\{.*grpc_method="Countdown",grpc_code="ResourceExhausted"\} 1$/m);
  const { code, output } = await promtool(text);
  assert.equal(output, "", "no findings");
  assert.equal(code, 0);
});

/**
 * Prometheus's own OpenMetrics parser, as promtool runs it to backfill: it takes only samples with a
 * timestamp, so one is added to each sample line (before its exemplar); everything else is parsed as served.
 */
function promtoolOpenMetrics(text: string): { code: number | null; output: string } {
  const dir = mkdtempSync(join(tmpdir(), "openmetrics-"));
  try {
    const now = Math.floor(Date.now() / 1000);
    const stamped = text.replace(
      /^([a-zA-Z_:][\w:]*(?:\{(?:[^}"]|"(?:[^"\\]|\\.)*")*\})? \S+)( # .*)?$/gm,
      (_, sample: string, exemplar = "") => `${sample} ${now}${exemplar}`,
    );
    writeFileSync(join(dir, "metrics.om"), stamped);
    const r = spawnSync("promtool", ["tsdb", "create-blocks-from", "openmetrics", join(dir, "metrics.om"), join(dir, "blocks")], {
      encoding: "utf8",
    });
    if (r.error) throw new Error(`promtool is missing: the system tests need Debian's prometheus package (${r.error.message})`);
    return { code: r.status, output: `${r.stdout}${r.stderr}` };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

test("Prometheus's OpenMetrics parser (promtool) accepts the OpenMetrics scrape, exemplars of a traced call included", async (t) => {
  await exportSpansTo(t); // spans go to a receiver that takes them
  const server = await startTestServer([fixtureService], { OVERLOAD_MAX_EVENT_LOOP_DELAY_MS: "1000000" });
  t.after(() => server.close());
  const client = server.client(FixtureService);
  await client.echo({ message: "traced" });
  await statusOf(client.fail({ code: Code.INVALID_ARGUMENT }));
  for await (const _ of client.countdown({ from: 2 })) {
    // drain the stream
  }
  const res = await fetch(`${server.httpUrl}/metrics`, { headers: { accept: "application/openmetrics-text;version=1.0.0" } });
  const text = await res.text();
  assert.match(
    text,
    /^grpc_server_handling_seconds_bucket\{[^}]*grpc_method="Echo"[^}]*\} \d+ # \{trace_id="[0-9a-f]{32}",span_id="[0-9a-f]{16}"\}/m,
  );
  const { code, output } = promtoolOpenMetrics(text);
  assert.equal(code, 0, output);
  assert.match(output, /NUM SAMPLES/);
});
