import type {
  DescMessage,
  DescMethodBiDiStreaming,
  DescMethodClientStreaming,
  DescMethodServerStreaming,
  DescMethodUnary,
  DescService,
  Message,
  MessageInitShape,
  MessageShape,
} from "@bufbuild/protobuf";
import { create } from "@bufbuild/protobuf";
import {
  type ChannelCredentials,
  type ChannelOptions,
  type ClientDuplexStream,
  type ClientReadableStream,
  type ClientWritableStream,
  credentials,
  Client as GrpcClient,
  Metadata,
} from "@grpc/grpc-js";
import { context, propagation } from "@opentelemetry/api";
import type { Logger } from "pino";
import { currentContext } from "../call/context.js";
import { drained } from "../call/drained.js";
import { Code } from "../call/status.js";
import type { ClientMetrics } from "../metrics/client-metrics.js";
import { grpcMethodDefinition } from "../server/grpc-definition.js";
import { AdaptiveThrottle, type BreakerOptions } from "./adaptive-throttle.js";
import { metricsInterceptor } from "./metrics-interceptor.js";
import { DEFAULT_BUDGET, type MethodPolicy, methodPath, type RetryBudget, type RetryPolicy, serviceConfig } from "./policy.js";
import { MethodBreaker, throttleInterceptor } from "./throttle-interceptor.js";

export interface CallOptions {
  metadata?: Metadata | Record<string, string>;
  /** Absolute deadline (Date or ms since the epoch); never later than the current call's own. */
  deadline?: Date | number;
  signal?: AbortSignal;
}

export interface ClientOptions<S extends DescService = DescService> {
  credentials?: ChannelCredentials;
  /** Header carrying the trace ID to the next service (TRACE_HEADER_NAME). */
  traceHeader?: string;
  /** Header carrying the per-request debug switch (DEBUG_LOG_HEADER_NAME). */
  debugHeader?: string;
  /**
   * Retries of every method without a policy of its own, done by grpc-js (gRFC A6). Default: 3 attempts in all,
   * UNAVAILABLE only, back-off 100 ms doubling up to 1 s. `false`: none.
   */
  retry?: RetryPolicy | false;
  /** Shorthand for `retry: { maxAttempts }` (1 turns retries off). */
  maxAttempts?: number;
  /** Policies of single methods, by their name on the client: `{ getStock: { hedging: { maxAttempts: 3, delayMs: 20 } } }`. */
  methods?: { [K in keyof S["method"]]?: MethodPolicy };
  /** The retry budget (grpc-js retry throttling); default { maxTokens: 10, tokenRatio: 0.1 }. `false`: unbounded retries. */
  retryBudget?: RetryBudget | false;
  /** The breaker: the adaptive throttle that fails calls locally while the dependency fails them (default on, k = 2, 10 s). */
  breaker?: BreakerOptions | false;
  /** How calls spread over the addresses a `dns:///name:port` target resolves to; default round_robin. */
  loadBalancing?: "round_robin" | "pick_first";
  channelOptions?: ChannelOptions;
  /** Where the calls are counted (`grpc_client_*`); `app.createClient` passes the service's own. None: not counted. */
  metrics?: ClientMetrics;
  /** Where the breaker says when it starts and stops rejecting calls; `app.createClient` passes the service's logger. */
  log?: Logger;
}

type UnaryMethod<M extends DescMethodUnary> = (
  request: MessageInitShape<M["input"]>,
  options?: CallOptions,
) => Promise<MessageShape<M["output"]>>;
/** Yields the responses as they arrive; stopping the iteration early (`break`) cancels the call. */
type StreamMethod<M extends DescMethodServerStreaming> = (
  request: MessageInitShape<M["input"]>,
  options?: CallOptions,
) => AsyncIterable<MessageShape<M["output"]>>;

/**
 * Sends the requests as the iterable yields them (waiting while the connection is full: back-pressure),
 * half-closes when it ends, and resolves to the one response. If the iterable throws, the call is
 * cancelled and the promise rejects with that error; if the call ends first, the iterable is closed.
 */
type ClientStreamMethod<M extends DescMethodClientStreaming> = (
  requests: AsyncIterable<MessageInitShape<M["input"]>>,
  options?: CallOptions,
) => Promise<MessageShape<M["output"]>>;
/**
 * Sends the requests as the iterable yields them, and yields the responses as they arrive; both run at
 * once. Stopping the iteration early (`break`) cancels the call; an error of the requests ends it too,
 * and the iteration throws that error.
 */
type BidiStreamMethod<M extends DescMethodBiDiStreaming> = (
  requests: AsyncIterable<MessageInitShape<M["input"]>>,
  options?: CallOptions,
) => AsyncIterable<MessageShape<M["output"]>>;

/** A promise-based gRPC client typed from the generated service: `await client.echo({ message: "hi" })`. */
export type Client<S extends DescService> = {
  [K in keyof S["method"]]: S["method"][K] extends DescMethodUnary
    ? UnaryMethod<S["method"][K]>
    : S["method"][K] extends DescMethodServerStreaming
      ? StreamMethod<S["method"][K]>
      : S["method"][K] extends DescMethodClientStreaming
        ? ClientStreamMethod<S["method"][K]>
        : S["method"][K] extends DescMethodBiDiStreaming
          ? BidiStreamMethod<S["method"][K]>
          : never;
} & { close(): void };

/**
 * A typed client for calling other services. Inside a call it carries the current call
 * along: trace ID and debug switch as headers, W3C trace context when tracing is on, and
 * a deadline no later than the current call's (for all its attempts together).
 *
 * Safe under a dead dependency by default: grpc-js retries UNAVAILABLE (gRFC A6) within a retry budget, and a
 * breaker fails calls locally, in microseconds, while most calls fail. `address` is `host:port` or, for
 * client-side balancing over every address a name resolves to (a headless Service), `dns:///name:port`.
 */
export function createClient<S extends DescService>(service: S, address: string, options: ClientOptions<S> = {}): Client<S> {
  const traceHeader = options.traceHeader ?? "x-trace-id";
  const debugHeader = options.debugHeader ?? "x-debug-log-level";
  const methods = (options.methods ?? {}) as Record<string, MethodPolicy | undefined>;
  const retry = options.retry ?? (options.maxAttempts === undefined ? {} : { maxAttempts: options.maxAttempts });
  const config = serviceConfig({
    service,
    retry,
    methods,
    budget: options.retryBudget ?? DEFAULT_BUDGET,
    loadBalancing: options.loadBalancing ?? "round_robin",
  });
  const grpc = new GrpcClient(address, options.credentials ?? credentials.createInsecure(), {
    "grpc.service_config": config,
    // Ours is the policy: a DNS TXT record does not replace it (and is not looked up).
    "grpc.service_config_disable_resolution": 1,
    ...options.channelOptions,
  });

  const prepare = (callOptions: CallOptions) => {
    const md = new Metadata();
    const ctx = currentContext();
    if (ctx) {
      if (ctx.traceId) md.set(traceHeader, ctx.traceId);
      if (ctx.debug) md.set(debugHeader, "debug");
    }
    propagation.inject(context.active(), md, { set: (carrier, key, value) => carrier.set(key, value) });
    const extra = callOptions.metadata;
    if (extra instanceof Metadata) md.merge(extra);
    else for (const [k, v] of Object.entries(extra ?? {})) md.set(k, v);
    const own = callOptions.deadline === undefined ? Number.POSITIVE_INFINITY : Number(callOptions.deadline);
    const deadline = Math.min(own, ctx?.deadline ?? Number.POSITIVE_INFINITY);
    return { md, deadline: Number.isFinite(deadline) ? deadline : undefined };
  };

  const client: Record<string, unknown> = { close: () => grpc.close() };
  for (const m of service.methods) {
    const d = grpcMethodDefinition(m);
    // Resolved once per method, so a call only adds to its series.
    const stats = options.metrics?.method(m);
    const hedging = methods[m.localName]?.hedging;
    const path = methodPath(m);
    const breaker =
      options.breaker === false
        ? undefined
        : new MethodBreaker(new AdaptiveThrottle(options.breaker), {
            rejected: stats?.rejected,
            path,
            dependency: address,
            log: options.log,
          });
    const interceptors = [
      ...(stats ? [metricsInterceptor(stats, hedging)] : []),
      throttleInterceptor({ breaker, rejectHere: m.methodKind !== "unary", path, dependency: address }),
    ];
    if (m.methodKind === "unary") {
      client[m.localName] = (request: object, callOptions: CallOptions = {}) => {
        // Rejected before grpc-js makes a call (a few µs, not tens): the breaker's answer, counted as a call.
        if (breaker?.rejects()) {
          if (stats) {
            stats.started.value++;
            stats.end(Code.UNAVAILABLE, performance.now());
          }
          return Promise.reject(breaker.error());
        }
        return new Promise<Message>((resolve, reject) => {
          const { md, deadline } = prepare(callOptions);
          const call = grpc.makeUnaryRequest(
            d.path,
            d.requestSerialize,
            d.responseDeserialize,
            create(m.input, request as never),
            md,
            { deadline, interceptors },
            (err, res) => (err ? reject(err) : resolve(res as Message)),
          );
          callOptions.signal?.addEventListener("abort", () => call.cancel(), { once: true });
        });
      };
    } else if (m.methodKind === "client_streaming") {
      client[m.localName] = (requests: AsyncIterable<object>, callOptions: CallOptions = {}) =>
        new Promise<Message>((resolve, reject) => {
          const { md, deadline } = prepare(callOptions);
          const sending: Sending = {};
          const call = grpc.makeClientStreamRequest(
            d.path,
            d.requestSerialize,
            d.responseDeserialize,
            md,
            { deadline, interceptors },
            // A failure of the requests wins over the CANCELLED the call then ends with.
            (err, res) => (err ? reject(sending.failed ? sending.error : err) : resolve(res as Message)),
          );
          callOptions.signal?.addEventListener("abort", () => call.cancel(), { once: true });
          void sendAll(requests, call, m.input, sending);
        });
    } else if (m.methodKind === "bidi_streaming") {
      client[m.localName] = (requests: AsyncIterable<object>, callOptions: CallOptions = {}) => {
        const { md, deadline } = prepare(callOptions);
        const call = grpc.makeBidiStreamRequest(d.path, d.requestSerialize, d.responseDeserialize, md, { deadline, interceptors });
        callOptions.signal?.addEventListener("abort", () => call.cancel(), { once: true });
        const sending: Sending = {};
        void sendAll(requests, call, m.input, sending);
        return responsesOf(call, sending);
      };
    } else {
      client[m.localName] = (request: object, callOptions: CallOptions = {}) => {
        const { md, deadline } = prepare(callOptions);
        const call = grpc.makeServerStreamRequest(
          d.path,
          d.requestSerialize,
          d.responseDeserialize,
          create(m.input, request as never),
          md,
          { deadline, interceptors },
        );
        callOptions.signal?.addEventListener("abort", () => call.cancel(), { once: true });
        // Leaving the iteration early (`break`) cancels the call: grpc-js's stream, once destroyed, would leave it open.
        return responsesOf(call, {});
      };
    }
  }
  return client as Client<S>;
}

/** How the sending of a stream's requests failed, if it did. */
interface Sending {
  failed?: boolean;
  error?: unknown;
}

/**
 * Writes each request as `requests` yields it, waiting for `drain` when grpc-js's buffer is full, then
 * half-closes. Stops (closing `requests`) once the call has its status. If `requests` throws, the error
 * is kept in `sending` and the call is cancelled.
 */
async function sendAll(
  requests: AsyncIterable<object>,
  call: ClientWritableStream<Message> | ClientDuplexStream<Message, Message>,
  input: DescMessage,
  sending: Sending,
): Promise<void> {
  const it = requests[Symbol.asyncIterator]();
  let over = false;
  call.once("status", () => {
    over = true;
    // Asks a source still producing to stop (it runs its `finally`): the call wants nothing more.
    it.return?.()?.catch(() => {});
  });
  try {
    for (;;) {
      const step = await it.next();
      if (over) break;
      if (step.done) {
        call.end();
        return;
      }
      if (!call.write(create(input, step.value as never))) await drained(call, "status");
    }
    await it.return?.();
  } catch (error) {
    sending.failed = true;
    sending.error = error;
    call.cancel();
  }
}

/** The responses of a bidi call as they arrive; leaving early cancels the call; a failure of the requests is the error thrown. */
async function* responsesOf(
  call: ClientDuplexStream<Message, Message> | ClientReadableStream<Message>,
  sending: Sending,
): AsyncGenerator<Message> {
  let finished = false;
  try {
    for await (const message of call as AsyncIterable<Message>) yield message;
    finished = true;
  } catch (err) {
    throw sending.failed ? sending.error : err;
  } finally {
    if (!finished) call.cancel();
  }
}
