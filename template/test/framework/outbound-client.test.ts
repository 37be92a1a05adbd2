import assert from "node:assert/strict";
import { once } from "node:events";
import { test } from "node:test";
import { Code, createClient, defineService, GrpcError } from "../../src/framework/index.js";
import { startTestServer } from "../../src/framework/testing/harness.js";
import { statusOf } from "../../src/framework/testing/status.js";
import { FixtureService } from "../gen/fixture/v1/fixture_pb.js";
import { fixtureService } from "./fixtures/fixture-service.js";

test("the outbound client forwards trace ID and debug switch, caps the deadline, and retries UNAVAILABLE", async (t) => {
  const seen: { traceId: string; debug: boolean; deadline: number }[] = [];
  let failuresLeft = 2;
  const downstream = await startTestServer([
    defineService(FixtureService, {
      handlers: {
        ...fixtureService.handlers, // every method of the fixture; this test needs only echo
        echo(request, ctx) {
          seen.push({ traceId: ctx.traceId, debug: ctx.debug, deadline: ctx.deadline });
          if (request.message === "flaky" && failuresLeft-- > 0) throw new GrpcError(Code.UNAVAILABLE, "try again");
          return { message: `downstream:${request.message}`, traceId: ctx.traceId };
        },
        async *countdown() {},
        fail: () => ({}),
      },
    }),
  ]);
  t.after(() => downstream.close());
  const next = createClient(FixtureService, downstream.grpcAddress);
  t.after(() => next.close());

  const upstream = await startTestServer([
    defineService(FixtureService, {
      handlers: {
        ...fixtureService.handlers, // every method of the fixture; this test needs only echo
        async echo(request) {
          return next.echo({ message: request.message });
        },
        async *countdown() {},
        fail: () => ({}),
      },
    }),
  ]);
  t.after(() => upstream.close());
  const client = upstream.client(FixtureService);

  const deadline = Date.now() + 5000;
  const res = await client.echo({ message: "hop", debug: true }, { metadata: { "x-trace-id": "hop-trace" }, deadline });
  assert.equal(res.message, "downstream:hop");
  assert.equal(res.traceId, "hop-trace");
  assert.equal(seen[0]?.traceId, "hop-trace");
  assert.equal(seen[0]?.debug, true);
  assert.ok(seen[0]!.deadline <= deadline + 50 && seen[0]!.deadline > Date.now(), "the downstream deadline is the caller's, not 60 s");

  seen.length = 0;
  assert.equal((await client.echo({ message: "flaky" })).message, "downstream:flaky");
  assert.equal(seen.length, 3, "two UNAVAILABLE attempts, then success");
});

/** The value of the one sample of `name` with exactly these labels in a Prometheus exposition (undefined: no such series). */
function sample(text: string, name: string, labels: Record<string, string>): number | undefined {
  const wanted = Object.entries(labels)
    .map(([k, v]) => `${k}="${v}"`)
    .sort()
    .join(",");
  for (const line of text.split("\n")) {
    const m = /^([a-zA-Z_:][\w:]*)\{(.*)\} (\S+)$/.exec(line);
    if (m?.[1] === name && m[2]!.split(",").sort().join(",") === wanted) return Number(m[3]);
  }
  return undefined;
}

async function scrape(httpUrl: string): Promise<string> {
  const res = await fetch(`${httpUrl}/metrics`);
  assert.equal(res.status, 200);
  return res.text();
}

const SERVICE = "fixture.v1.FixtureService";
const unary = (method: string, extra: Record<string, string> = {}) => ({
  grpc_type: "unary",
  grpc_service: SERVICE,
  grpc_method: method,
  ...extra,
});
const stream = (method: string, extra: Record<string, string> = {}) => ({ ...unary(method, extra), grpc_type: "server_stream" });

/** A downstream whose Echo fails UNAVAILABLE `failuresLeft` times for "flaky", and whose Fail fails with the asked code. */
async function startDownstream(t: { after(fn: () => unknown): void }) {
  const state = { failuresLeft: 0 };
  const server = await startTestServer([
    defineService(FixtureService, {
      handlers: {
        ...fixtureService.handlers, // every method of the fixture; this test needs only echo
        echo(request) {
          if (request.message === "flaky" && state.failuresLeft-- > 0) throw new GrpcError(Code.UNAVAILABLE, "try again");
          return { message: request.message };
        },
        async *countdown(request) {
          for (let remaining = request.from; remaining >= 1; remaining--) yield { remaining };
        },
        fail(request) {
          throw new GrpcError(request.code, "failed as asked");
        },
      },
    }),
  ]);
  t.after(() => server.close());
  return { server, state };
}

test("app.createClient counts its calls in grpc_client_*: by method and code, messages each way, retries, latency", async (t) => {
  const { server: downstream, state } = await startDownstream(t);
  const service = await startTestServer([fixtureService]);
  t.after(() => service.close());
  const client = service.app.createClient(FixtureService, downstream.grpcAddress);
  t.after(() => client.close());

  const before = await scrape(service.httpUrl);
  for (const labels of [unary("Echo"), stream("Countdown"), unary("Fail")]) {
    for (const family of [
      "grpc_client_started_total",
      "grpc_client_msg_sent_total",
      "grpc_client_msg_received_total",
      "grpc_client_retries_total",
      "grpc_client_attempts_total",
      "grpc_client_hedges_total",
      "grpc_client_rejected_total",
    ]) {
      assert.equal(sample(before, family, labels), 0, `${family} ${labels.grpc_method} exists at 0 once the client is made`);
    }
    assert.equal(sample(before, "grpc_client_handled_total", { ...labels, grpc_code: "OK" }), 0);
    assert.equal(sample(before, "grpc_client_handling_seconds_count", labels), 0);
  }

  assert.equal((await client.echo({ message: "one" })).message, "one");
  state.failuresLeft = 2;
  assert.equal((await client.echo({ message: "flaky" })).message, "flaky", "two UNAVAILABLE attempts, then success");
  assert.equal((await statusOf(client.fail({ code: Code.INVALID_ARGUMENT }))).code, Code.INVALID_ARGUMENT);
  assert.equal(
    (await statusOf(client.fail({ code: Code.UNAVAILABLE }))).code,
    Code.UNAVAILABLE,
    "still UNAVAILABLE after 3 attempts (the default)",
  );
  const remaining: number[] = [];
  for await (const m of client.countdown({ from: 3 })) remaining.push(m.remaining);
  assert.deepEqual(remaining, [3, 2, 1]);

  const m = await scrape(service.httpUrl);
  assert.equal(sample(m, "grpc_client_started_total", unary("Echo")), 2);
  assert.equal(sample(m, "grpc_client_handled_total", unary("Echo", { grpc_code: "OK" })), 2);
  assert.equal(sample(m, "grpc_client_msg_sent_total", unary("Echo")), 2);
  assert.equal(sample(m, "grpc_client_msg_received_total", unary("Echo")), 2);
  assert.equal(sample(m, "grpc_client_retries_total", unary("Echo")), 2, "the flaky call's two extra attempts");
  assert.equal(sample(m, "grpc_client_attempts_total", unary("Echo")), 4, "one, then three for the flaky call");
  assert.equal(sample(m, "grpc_client_handling_seconds_count", unary("Echo")), 2);

  assert.equal(sample(m, "grpc_client_started_total", unary("Fail")), 2);
  assert.equal(sample(m, "grpc_client_handled_total", unary("Fail", { grpc_code: "OK" })), 0);
  assert.equal(sample(m, "grpc_client_handled_total", unary("Fail", { grpc_code: "InvalidArgument" })), 1);
  assert.equal(sample(m, "grpc_client_handled_total", unary("Fail", { grpc_code: "Unavailable" })), 1);
  assert.equal(sample(m, "grpc_client_msg_received_total", unary("Fail")), 0, "a failed unary call receives no message");
  assert.equal(sample(m, "grpc_client_retries_total", unary("Fail")), 2, "INVALID_ARGUMENT is not retried; UNAVAILABLE twice");
  assert.equal(sample(m, "grpc_client_attempts_total", unary("Fail")), 4);
  assert.equal(sample(m, "grpc_client_rejected_total", unary("Fail")), 0, "two failed calls do not open the breaker");

  assert.equal(sample(m, "grpc_client_msg_sent_total", stream("Countdown")), 1);
  assert.equal(sample(m, "grpc_client_msg_received_total", stream("Countdown")), 3, "each streamed message");
  assert.equal(sample(m, "grpc_client_handled_total", stream("Countdown", { grpc_code: "OK" })), 1);

  // The downstream's server metrics see every attempt: one call counted by the client, three by the server.
  const served = await scrape(downstream.httpUrl);
  assert.equal(sample(served, "grpc_server_handled_total", unary("Fail", { grpc_code: "Unavailable" })), 3);
  assert.equal(sample(served, "grpc_client_started_total", unary("Echo")), undefined, "the server's own clients are not involved");
});

test("a client's cancelled stream is counted Canceled, and clients of the same service share their series", async (t) => {
  const { server: downstream } = await startDownstream(t);
  const service = await startTestServer([fixtureService]);
  t.after(() => service.close());
  const first = service.app.createClient(FixtureService, downstream.grpcAddress);
  const second = service.app.createClient(FixtureService, downstream.grpcAddress);
  t.after(() => {
    first.close();
    second.close();
  });

  await first.echo({ message: "a" });
  await second.echo({ message: "b" });
  const stop = new AbortController();
  const cancelled = (async () => {
    for await (const _ of first.countdown({ from: 5 }, { signal: stop.signal })) stop.abort();
  })();
  assert.equal((await statusOf(cancelled)).code, Code.CANCELLED);

  const m = await scrape(service.httpUrl);
  assert.equal(sample(m, "grpc_client_handled_total", unary("Echo", { grpc_code: "OK" })), 2);
  assert.equal(sample(m, "grpc_client_handled_total", stream("Countdown", { grpc_code: "Canceled" })), 1);
});

test("the client histogram follows ENABLE_PROMETHEUS_GRPC_HISTOGRAM and its buckets; DISABLE_PROMETHEUS measures nothing", async (t) => {
  const { server: downstream } = await startDownstream(t);
  const withBuckets = await startTestServer([fixtureService], { PROMETHEUS_GRPC_HISTOGRAM_BUCKETS: "0.5,5" });
  const withoutHistogram = await startTestServer([fixtureService], { ENABLE_PROMETHEUS_GRPC_HISTOGRAM: "false" });
  const disabled = await startTestServer([fixtureService], { DISABLE_PROMETHEUS: "true" });
  t.after(() => Promise.all([withBuckets.close(), withoutHistogram.close(), disabled.close()]));
  for (const service of [withBuckets, withoutHistogram, disabled]) {
    const client = service.app.createClient(FixtureService, downstream.grpcAddress);
    t.after(() => client.close());
    assert.equal((await client.echo({ message: "counted?" })).message, "counted?");
  }

  // The configured buckets and no others; which of them the one call fell into depends on how long it took.
  const bucketed = await scrape(withBuckets.httpUrl);
  const echoBuckets = [...bucketed.matchAll(/^grpc_client_handling_seconds_bucket\{(.*)\} (\S+)$/gm)]
    .filter(([, labels]) => labels!.includes('grpc_method="Echo"'))
    .map(([, labels, value]) => [/le="([^"]+)"/.exec(labels!)?.[1], Number(value)] as const);
  assert.deepEqual(
    echoBuckets.map(([le]) => le),
    ["0.5", "5", "+Inf"],
  );
  const counts = echoBuckets.map(([, count]) => count);
  assert.deepEqual(
    counts,
    [...counts].sort((a, b) => a - b),
    "cumulative counts",
  );
  assert.equal(counts.at(-1), 1);
  const plain = await scrape(withoutHistogram.httpUrl);
  assert.equal(sample(plain, "grpc_client_handled_total", unary("Echo", { grpc_code: "OK" })), 1);
  assert.doesNotMatch(plain, /grpc_client_handling_seconds/);
  assert.equal(disabled.app.metrics, undefined);
  assert.equal((await fetch(`${disabled.httpUrl}/metrics`)).status, 404);
});

test("leaving a server stream early (break) cancels the call: the server's handler is told", { timeout: 10_000 }, async (t) => {
  let aborted!: Promise<unknown>;
  const downstream = await startTestServer([
    defineService(FixtureService, {
      handlers: {
        async *countdown(request, ctx) {
          aborted = once(ctx.signal, "abort");
          for (let remaining = request.from; remaining >= 1; remaining--) yield { remaining };
        },
      },
    }),
  ]);
  t.after(() => downstream.close());
  const client = createClient(FixtureService, downstream.grpcAddress);
  t.after(() => client.close());
  for await (const m of client.countdown({ from: 1000 })) {
    assert.equal(m.remaining, 1000);
    break;
  }
  await aborted; // else the test times out: the handler would run on, its stream open
});
