import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { create, type Message } from "@bufbuild/protobuf";
import { Metadata } from "@grpc/grpc-js";
import { CountdownResponseSchema, EchoRequestSchema, EchoResponseSchema, FixtureService } from "../../../test/gen/fixture/v1/fixture_pb.js";
import { CallContext } from "../call/context.js";
import { methodInfo } from "../call/method.js";
import { Code, GrpcError } from "../call/status.js";
import type { Call, CallResult, MethodInfo, Next } from "../call/types.js";
import { ServerMetrics } from "../metrics/server-metrics.js";
import { grpcMetrics } from "./metrics.js";

const echo = methodInfo(FixtureService.method.echo);
const countdown = methodInfo(FixtureService.method.countdown);

function setup(histogram = true) {
  return new ServerMetrics({ ENABLE_PROMETHEUS_GRPC_HISTOGRAM: histogram, PROMETHEUS_GRPC_HISTOGRAM_BUCKETS: [0.1, 1] });
}

function callOf(info: MethodInfo, controller = new AbortController(), deadline = Number.POSITIVE_INFINITY): Call {
  const ctx = new CallContext({ method: info, transport: "grpc", metadata: new Metadata(), controller, deadline });
  return { method: info, ctx, request: create(EchoRequestSchema, { message: "hi" }) };
}

async function* messages(n: number, fail?: unknown): AsyncGenerator<Message> {
  for (let i = n; i >= 1; i--) yield create(CountdownResponseSchema, { remaining: i });
  if (fail !== undefined) throw fail;
}

function streamOf(result: CallResult): AsyncIterable<Message> {
  assert.ok("stream" in result);
  return result.stream;
}

async function settle(promise: Promise<unknown>): Promise<void> {
  await promise.catch(() => {});
}

/** A snapshot of one method's series. */
function counts(metrics: ServerMetrics, info: MethodInfo) {
  const s = metrics.method(info);
  const handled: Record<number, number> = {};
  s.handled.forEach((series, code) => {
    if (series) handled[code] = series.value;
  });
  return { started: s.started.value, received: s.received.value, sent: s.sent.value, handled, observed: s.duration?.count };
}

describe("the metrics interceptor", () => {
  test("composing it creates the method's series at 0, handled only for OK", () => {
    const metrics = setup();
    grpcMetrics(metrics)(async () => ({ message: create(EchoResponseSchema) }), echo);
    assert.deepEqual(counts(metrics, echo), { started: 0, received: 0, sent: 0, handled: { [Code.OK]: 0 }, observed: 0 });
  });

  test("a unary call counts started, received, sent, handled OK and one latency observation", async () => {
    const metrics = setup();
    const invoke = grpcMetrics(metrics)(async () => ({ message: create(EchoResponseSchema) }), echo);
    await invoke(callOf(echo));
    await invoke(callOf(echo));
    assert.deepEqual(counts(metrics, echo), { started: 2, received: 2, sent: 2, handled: { [Code.OK]: 2 }, observed: 2 });
  });

  test("a failed unary call counts its code and sends nothing; a non-status error (and a synchronous throw) counts as Internal", async () => {
    const metrics = setup();
    const fail: Next = async () => {
      throw new GrpcError(Code.NOT_FOUND, "no");
    };
    await settle(grpcMetrics(metrics)(fail, echo)(callOf(echo)));
    const sync = (() => {
      throw new Error("sync");
    }) as Next;
    await settle(grpcMetrics(metrics)(sync, echo)(callOf(echo)));
    assert.deepEqual(counts(metrics, echo), {
      started: 2,
      received: 2,
      sent: 0,
      handled: { [Code.OK]: 0, [Code.NOT_FOUND]: 1, [Code.INTERNAL]: 1 },
      observed: 2,
    });
  });

  test("a stream counts each message as the consumer takes it, and handled once at the end", async () => {
    const metrics = setup();
    const result = await grpcMetrics(metrics)(async () => ({ stream: messages(3) }), countdown)(callOf(countdown));
    const sentWhileReading: number[] = [];
    for await (const _ of streamOf(result)) sentWhileReading.push(metrics.method(countdown).sent.value);
    assert.deepEqual(sentWhileReading, [1, 2, 3]);
    assert.deepEqual(counts(metrics, countdown), { started: 1, received: 1, sent: 3, handled: { [Code.OK]: 1 }, observed: 1 });
  });

  test("a stream failing mid-way counts the messages before it and the error's code", async () => {
    const metrics = setup();
    const result = await grpcMetrics(metrics)(async () => ({ stream: messages(2, new GrpcError(Code.ABORTED, "x")) }), countdown)(
      callOf(countdown),
    );
    await settle(
      (async () => {
        for await (const _ of streamOf(result)) {
          // drain
        }
      })(),
    );
    assert.deepEqual(counts(metrics, countdown).handled, { [Code.OK]: 0, [Code.ABORTED]: 1 });
    assert.equal(counts(metrics, countdown).sent, 2);
  });

  test("a stream the consumer leaves because the call was aborted ends Canceled, or DeadlineExceeded past the deadline", async () => {
    const metrics = setup();
    const invoke = grpcMetrics(metrics)(async () => ({ stream: messages(5) }), countdown);
    const cancelled = new AbortController();
    for await (const _ of streamOf(await invoke(callOf(countdown, cancelled)))) {
      cancelled.abort();
      break;
    }
    const expired = new AbortController();
    for await (const _ of streamOf(await invoke(callOf(countdown, expired, Date.now() - 1)))) {
      expired.abort();
      break;
    }
    for await (const _ of streamOf(await invoke(callOf(countdown)))) break; // left early, nothing aborted
    assert.deepEqual(counts(metrics, countdown).handled, { [Code.OK]: 1, [Code.CANCELLED]: 1, [Code.DEADLINE_EXCEEDED]: 1 });
  });

  test("a stream that fails before its first message counts the code", async () => {
    const metrics = setup();
    await settle(
      grpcMetrics(metrics)(async () => {
        throw new GrpcError(Code.PERMISSION_DENIED, "no");
      }, countdown)(callOf(countdown)),
    );
    assert.deepEqual(counts(metrics, countdown), {
      started: 1,
      received: 1,
      sent: 0,
      handled: { [Code.OK]: 0, [Code.PERMISSION_DENIED]: 1 },
      observed: 1,
    });
  });

  test("without the histogram nothing is timed", async () => {
    const metrics = setup(false);
    await grpcMetrics(metrics)(async () => ({ message: create(EchoResponseSchema) }), echo)(callOf(echo));
    assert.equal(metrics.method(echo).duration, undefined);
    assert.deepEqual(counts(metrics, echo).handled, { [Code.OK]: 1 });
    assert.doesNotMatch(await metrics.render(), /grpc_server_handling_seconds/);
  });

  test("onRateLimited counts a rejection for the method with that path, and ignores unknown paths", () => {
    const metrics = setup();
    metrics.method(echo);
    metrics.onRateLimited(echo.path);
    metrics.onRateLimited(echo.path);
    metrics.onRateLimited("/nope.v1.Nope/Nothing");
    assert.equal(metrics.method(echo).rateLimited.value, 2);
  });
});
