import assert from "node:assert/strict";
import { beforeEach, describe, test } from "node:test";
import { create, type Message } from "@bufbuild/protobuf";
import { Metadata } from "@grpc/grpc-js";
import {
  type CountdownResponse,
  CountdownResponseSchema,
  type EchoRequest,
  EchoRequestSchema,
  type EchoResponse,
  EchoResponseSchema,
  FixtureService,
} from "../../../test/gen/fixture/v1/fixture_pb.js";
import { Chain, type NamedInterceptor } from "../call/chain.js";
import { CallContext } from "../call/context.js";
import { methodInfo } from "../call/method.js";
import { Code, GrpcError } from "../call/status.js";
import type { Call, CallResult, Next } from "../call/types.js";
import { loadConfig } from "../config/load.js";
import { logReporter } from "../errors/reporter.js";
import { observe } from "../interceptors/observe.js";
import { recovery } from "../interceptors/recovery.js";
import { configureLogging } from "../logging/logger.js";
import { type ChainDeps, defaultInterceptors } from "./default-chain.js";
import type { ServiceImpl } from "./service.js";

const logs: Record<string, unknown>[] = [];
configureLogging({
  level: "info",
  format: "json",
  destination: { write: (line: string) => void logs.push(JSON.parse(line) as Record<string, unknown>) },
});

const echoInfo = methodInfo(FixtureService.method.echo);
const countdownInfo = methodInfo(FixtureService.method.countdown);

function callOf(info = echoInfo, request: Message = create(EchoRequestSchema, { message: "hi" })): Call {
  const ctx = new CallContext({
    method: info,
    transport: "grpc",
    metadata: new Metadata(),
    controller: new AbortController(),
    deadline: Number.POSITIVE_INFINITY,
  });
  return { method: info, ctx, request };
}

async function rejection(promise: Promise<unknown>): Promise<unknown> {
  try {
    await promise;
  } catch (err) {
    return err;
  }
  assert.fail("expected a rejection");
}

function assertInternal(err: unknown, cause?: unknown): void {
  assert.ok(err instanceof GrpcError, `expected GrpcError, got ${String(err)}`);
  assert.equal(err.code, Code.INTERNAL);
  assert.equal(err.message, "internal error");
  if (cause !== undefined) assert.equal(err.cause, cause);
}

async function* countdown(from: number, failAfter?: unknown): AsyncGenerator<Message> {
  for (let i = from; i >= 1; i--) {
    yield create(CountdownResponseSchema, { remaining: i });
    if (failAfter !== undefined) throw failAfter;
  }
}

function streamOf(result: CallResult): AsyncIterable<Message> {
  assert.ok("stream" in result, "expected a stream result");
  return result.stream;
}

beforeEach(() => {
  logs.length = 0;
});

/** Outermost first, with auth and tracing off (when on, tracing comes first, then auth). */
const DEFAULT_ORDER = ["timeout", "rateLimit", "responseTimeLog", "traceId", "debugLog", "validate", "errorNotification", "recovery"];

function defaults(env: Record<string, string>, deps: Partial<ChainDeps> = {}) {
  return defaultInterceptors(loadConfig(env), { reporter: logReporter, tracing: false, ...deps });
}

describe("the interceptor chain", () => {
  // The guard test of the chain order: it lives in default-chain.ts and nowhere else. Change both together.
  test("the default chain order is exactly the documented one", () => {
    assert.deepEqual(new Chain(defaults({})).names(), DEFAULT_ORDER);
  });

  test("auth is absent when off, and first (before timeout) when JWT_SECRET or API_KEYS is set", () => {
    const secret = "0123456789abcdef0123456789abcdef";
    assert.ok(!new Chain(defaults({})).names().includes("auth"), "no entry at all when auth is off");
    assert.deepEqual(new Chain(defaults({ JWT_SECRET: secret })).names(), ["auth", ...DEFAULT_ORDER]);
    assert.deepEqual(new Chain(defaults({ API_KEYS: "k1,k2" })).names(), ["auth", ...DEFAULT_ORDER]);
    assert.deepEqual(new Chain(defaults({ JWT_SECRET: secret, API_KEYS: "k1" })).names(), ["auth", ...DEFAULT_ORDER]);
  });

  test("a service's auth override puts auth first even with the settings off; other methods skip it at zero cost", () => {
    const overriding = { desc: FixtureService, handlers: {}, authorize: () => {} } as unknown as ServiceImpl;
    assert.deepEqual(new Chain(defaults({}, { services: [overriding] })).names(), ["auth", ...DEFAULT_ORDER]);
    const auth = new Chain(defaults({}, { services: [overriding] })).entries()[0]!.interceptor;
    const next: Next = async () => ({ message: create(EchoResponseSchema) });
    const otherService = { ...echoInfo, service: "other.v1.OtherService" };
    assert.equal(auth(next, otherService), next, "a method of a service without override gets next itself");
    assert.notEqual(auth(next, echoInfo), next);
  });

  test("with tracing on, the tracing interceptor comes first, so every call and every log line of it has its span", () => {
    const names = new Chain(defaults({}, { tracing: true })).names();
    assert.deepEqual(names, ["tracing", ...DEFAULT_ORDER]);
  });

  test("DISABLE_DEBUG_LOG_INTERCEPTOR=true removes debugLog and keeps the rest in order", () => {
    const names = new Chain(defaults({ DISABLE_DEBUG_LOG_INTERCEPTOR: "true" })).names();
    assert.deepEqual(
      names,
      DEFAULT_ORDER.filter((n) => n !== "debugLog"),
    );
  });

  test("DISABLE_PROTO_VALIDATE=true removes validate and keeps the rest in order", () => {
    const names = new Chain(defaults({ DISABLE_PROTO_VALIDATE: "true" })).names();
    assert.deepEqual(
      names,
      DEFAULT_ORDER.filter((n) => n !== "validate"),
    );
  });

  test("prepend puts custom interceptors before the defaults, the latest call outermost", () => {
    const chain = new Chain(defaults({}));
    const passthrough = (name: string): NamedInterceptor => ({ name, interceptor: (next) => next });
    chain.prepend(passthrough("a"), passthrough("b"));
    chain.prepend(passthrough("first"));
    assert.deepEqual(chain.names(), ["first", "a", "b", ...DEFAULT_ORDER]);
  });

  test("a composed chain runs the interceptors in the listed order around the handler", async () => {
    const order: string[] = [];
    const recorder = (name: string): NamedInterceptor => ({
      name,
      interceptor: (next) => async (call) => {
        order.push(`${name}:in`);
        const result = await next(call);
        order.push(`${name}:out`);
        return result;
      },
    });
    const chain = new Chain([recorder("x"), recorder("y")]);
    chain.prepend(recorder("custom"));
    const invoke = chain.compose(echoInfo, async () => {
      order.push("handler");
      return { message: create(EchoResponseSchema) };
    });
    await invoke(callOf());
    assert.deepEqual(order, ["custom:in", "x:in", "y:in", "handler", "y:out", "x:out", "custom:out"]);
  });

  test("the around step (the metrics) wraps the whole chain, custom interceptors included, and is not one of its names", async () => {
    const order: string[] = [];
    const recorder = (name: string) => ({
      name,
      interceptor: (next: Next) => async (call: Call) => {
        order.push(`${name}:in`);
        try {
          return await next(call);
        } finally {
          order.push(`${name}:out`);
        }
      },
    });
    const refuse: NamedInterceptor = {
      name: "refuse",
      interceptor: () => () => {
        throw new GrpcError(Code.UNAUTHENTICATED, "no");
      },
    };
    const chain = new Chain([refuse], { around: recorder("around").interceptor });
    chain.prepend(recorder("custom"));
    assert.deepEqual(chain.names(), ["custom", "refuse"]);
    const err = await rejection(chain.compose(echoInfo, async () => ({ message: create(EchoResponseSchema) }))(callOf()));
    assert.equal((err as GrpcError).code, Code.UNAUTHENTICATED, "a call the chain rejects still leaves through the around step");
    assert.deepEqual(order, ["around:in", "custom:in", "custom:out", "around:out"]);
  });

  test("an interceptor that throws synchronously fails the call as a rejection; the one above sees it from next()", async () => {
    const refused = new GrpcError(Code.PERMISSION_DENIED, "no");
    let seenAbove: unknown;
    const above: NamedInterceptor = {
      name: "above",
      // Not async: a synchronous throw from next() would escape this .then() chain.
      interceptor: (next) => (call) =>
        next(call).catch((err: unknown) => {
          seenAbove = err;
          throw err;
        }),
    };
    const thrower: NamedInterceptor = {
      name: "thrower",
      interceptor: () => () => {
        throw refused;
      },
    };
    const invoke = new Chain([above, thrower]).compose(echoInfo, async () => ({ message: create(EchoResponseSchema) }));
    const outcome = invoke(callOf());
    assert.ok(outcome instanceof Promise);
    assert.equal(await rejection(outcome), refused);
    assert.equal(seenAbove, refused);
  });

  test("prepend after compose throws", () => {
    const chain = new Chain(defaults({}));
    chain.compose(echoInfo, async () => ({ message: create(EchoResponseSchema) }));
    assert.throws(() => chain.prepend({ name: "late", interceptor: (next) => next }), /only be added during initialisation/);
    assert.deepEqual(chain.names(), DEFAULT_ORDER);
  });

  test("the full default chain sets the trace ID, validates and logs the response time", async () => {
    const invoke = new Chain(defaults({})).compose(echoInfo, async (call) => ({
      message: create(EchoResponseSchema, { message: (call.request as EchoRequest).message, traceId: call.ctx.traceId }),
    }));
    const call = callOf(echoInfo, create(EchoRequestSchema, { message: "hi", traceId: "trace-from-request" }));
    const result = await invoke(call);
    assert.ok("message" in result);
    assert.equal((result.message as EchoResponse).traceId, "trace-from-request");
    assert.equal(call.ctx.responseHeader.get("x-trace-id")[0], "trace-from-request");
    const line = logs.find((l) => l.msg === "response time");
    assert.ok(line, "a response-time line is logged");
    assert.equal(line.grpcCode, "OK");
    assert.equal(line.trace, "trace-from-request");

    // An empty message breaks the min_len rule: validate answers before the handler.
    const err = await rejection(invoke(callOf(echoInfo, create(EchoRequestSchema, { message: "" }))));
    assert.ok(err instanceof GrpcError);
    assert.equal(err.code, Code.INVALID_ARGUMENT);
  });

  test("with DISABLE_PROTO_VALIDATE=true an invalid request reaches the handler", async () => {
    let reached = false;
    const invoke = new Chain(defaults({ DISABLE_PROTO_VALIDATE: "true" })).compose(echoInfo, async () => {
      reached = true;
      return { message: create(EchoResponseSchema) };
    });
    await invoke(callOf(echoInfo, create(EchoRequestSchema, { message: "" })));
    assert.equal(reached, true);
  });
});

describe("recovery", () => {
  test('a handler throwing a plain Error becomes INTERNAL "internal error", with the original logged', async () => {
    const boom = new Error("database password is hunter2");
    const invoke = recovery(async () => {
      throw boom;
    }, echoInfo);
    const err = await rejection(invoke(callOf()));
    assertInternal(err, boom);
    assert.doesNotMatch((err as Error).message, /hunter2/);
    const line = logs.find((l) => l.level === "error");
    assert.ok(line, "the original error is logged");
    assert.match(JSON.stringify(line.err), /hunter2/);
    assert.match(JSON.stringify(line.err), /stack/);
  });

  test("a handler that throws synchronously is recovered the same way", async () => {
    const invoke = recovery(
      (() => {
        throw new TypeError("sync");
      }) as Next,
      echoInfo,
    );
    assertInternal(await rejection(invoke(callOf())));
  });

  test("a thrown non-Error value is recovered as INTERNAL", async () => {
    const invoke = recovery(() => Promise.reject("just a string"), echoInfo);
    assertInternal(await rejection(invoke(callOf())), "just a string");
  });

  test("a GrpcError passes through unchanged", async () => {
    const status = new GrpcError(Code.NOT_FOUND, "no such book");
    const invoke = recovery(async () => {
      throw status;
    }, echoInfo);
    assert.equal(await rejection(invoke(callOf())), status);
    assert.equal(logs.filter((l) => l.level === "error").length, 0);
  });

  test("a grpc-js status error from a downstream call keeps its code and message", async () => {
    const downstream = Object.assign(new Error("14 UNAVAILABLE: backend down"), {
      code: Code.UNAVAILABLE,
      details: "backend down",
      metadata: new Metadata(),
    });
    const invoke = recovery(async () => {
      throw downstream;
    }, echoInfo);
    const err = await rejection(invoke(callOf()));
    assert.ok(err instanceof GrpcError);
    assert.equal(err.code, Code.UNAVAILABLE);
    assert.equal(err.message, "backend down");
  });

  test("a successful unary result is returned as is", async () => {
    const message = create(EchoResponseSchema, { message: "ok" });
    const result = await recovery(async () => ({ message }), echoInfo)(callOf());
    assert.ok("message" in result);
    assert.equal(result.message, message);
  });

  test("a stream that throws a plain Error mid-way delivers its messages, then INTERNAL", async () => {
    const boom = new Error("mid-stream failure");
    const result = await recovery(async () => ({ stream: countdown(3, boom) }), countdownInfo)(callOf(countdownInfo));
    const received: number[] = [];
    const err = await rejection(
      (async () => {
        for await (const m of streamOf(result)) received.push((m as CountdownResponse).remaining);
      })(),
    );
    assert.deepEqual(received, [3]);
    assertInternal(err, boom);
    assert.ok(
      logs.some((l) => l.level === "error"),
      "the mid-stream error is logged",
    );
  });

  test("a stream that throws a GrpcError mid-way passes it through", async () => {
    const status = new GrpcError(Code.ABORTED, "conflict");
    const result = await recovery(async () => ({ stream: countdown(2, status) }), countdownInfo)(callOf(countdownInfo));
    const err = await rejection(
      (async () => {
        for await (const _ of streamOf(result)) {
          // drain
        }
      })(),
    );
    assert.equal(err, status);
  });

  test("a stream that completes is delivered whole", async () => {
    const result = await recovery(async () => ({ stream: countdown(3) }), countdownInfo)(callOf(countdownInfo));
    const received: number[] = [];
    for await (const m of streamOf(result)) received.push((m as CountdownResponse).remaining);
    assert.deepEqual(received, [3, 2, 1]);
  });
});

describe("observe", () => {
  test("a unary result ends at once with one message and no error", () => {
    const ends: [unknown, number][] = [];
    const result: CallResult = { message: create(EchoResponseSchema) };
    assert.equal(
      observe(result, (e, n) => ends.push([e, n])),
      result,
    );
    assert.deepEqual(ends, [[undefined, 1]]);
  });

  test("a stream ends once, after its last message, with the count", async () => {
    const ends: [unknown, number][] = [];
    const observed = observe({ stream: countdown(3) }, (e, n) => ends.push([e, n]));
    const seen: number[] = [];
    for await (const _ of streamOf(observed)) seen.push(ends.length);
    assert.deepEqual(seen, [0, 0, 0], "onEnd must not fire before the stream is over");
    assert.deepEqual(ends, [[undefined, 3]]);
  });

  test("a stream that fails ends once with the error and the messages sent before it", async () => {
    const ends: [unknown, number][] = [];
    const boom = new Error("boom");
    const observed = observe({ stream: countdown(5, boom) }, (e, n) => ends.push([e, n]));
    const err = await rejection(
      (async () => {
        for await (const _ of streamOf(observed)) {
          // drain
        }
      })(),
    );
    assert.equal(err, boom);
    assert.deepEqual(ends, [[boom, 1]]);
  });

  test("a stream the consumer abandons early ends once without an error", async () => {
    const ends: [unknown, number][] = [];
    const observed = observe({ stream: countdown(5) }, (e, n) => ends.push([e, n]));
    for await (const _ of streamOf(observed)) break;
    assert.deepEqual(ends, [[undefined, 1]]);
  });
});
