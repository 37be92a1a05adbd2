// What each interceptor of the default chain costs per call, without any network: Echo through the
// gateway's in-process invoker (the framework's own entry into the chain) with the full default chain,
// with no interceptor at all, and with each interceptor left out in turn. A few building blocks the
// profile points at are timed alone too. Logs go to /dev/null through the service's own pino setup.
//
//   node --import tsx bench/chain.ts [trials=15]
//
// Variants alternate in short trials of 64 concurrent calls at a time; each figure is the best trial
// (other load on the machine only ever slows a trial down), in ns per call.
import { randomUUID } from "node:crypto";
import { type EventEmitter, once } from "node:events";
import { create, fromJsonString, toJsonString } from "@bufbuild/protobuf";
import { timestampNow } from "@bufbuild/protobuf/wkt";
import { Metadata } from "@grpc/grpc-js";
import { Chain, type NamedInterceptor } from "../src/framework/call/chain.js";
import { Code, GrpcError } from "../src/framework/call/status.js";
import { loadConfig } from "../src/framework/config/load.js";
import { inProcessInvoker } from "../src/framework/gateway/invoker.js";
import { grpcMetrics } from "../src/framework/interceptors/metrics.js";
import { defaultInterceptors } from "../src/framework/lifecycle/default-chain.js";
import { batchedDestination, configureLogging } from "../src/framework/logging/logger.js";
import { createServerMetrics } from "../src/framework/metrics/server-metrics.js";
import { bindMethods } from "../src/framework/server/methods.js";
import { EchoRequestSchema, EchoResponseSchema, serviceImpl } from "./proto.js";

const TRIALS = Number(process.argv[2] ?? 15);
const CALLS = 20_000;
const CONCURRENCY = 64;

// The service's own batched destination, to /dev/null: the log line costs here what it costs in the service.
// The file opens on the event loop, which the trials (promises only) never reach: wait for it first.
const logDestination = batchedDestination("/dev/null");
configureLogging({ level: "info", format: "json", destination: logDestination });
await once(logDestination as unknown as EventEmitter, "ready");

type Invoke = () => Promise<unknown>;

/** The gRPC metrics wrap the chain (the Chain's `around`) rather than being one of its entries; "metrics" names them here. */
function chainVariant(env: Record<string, string>, filter: (e: NamedInterceptor) => boolean = () => true): Invoke {
  const config = loadConfig(env);
  const metrics = createServerMetrics(config);
  const interceptors = defaultInterceptors(config, {
    reporter: { report() {} },
    tracing: false,
    services: [serviceImpl],
    metrics,
  }).filter(filter);
  const around = metrics && filter({ name: "metrics", interceptor: grpcMetrics(metrics) }) ? grpcMetrics(metrics) : undefined;
  const echo = bindMethods([serviceImpl], new Chain(interceptors, { around })).find((m) => m.info.name === "Echo")!;
  const invoker = inProcessInvoker();
  const request = create(EchoRequestSchema, { message: "The quick brown fox jumps over the lazy dog" });
  return async () => {
    const call = await invoker.invoke(echo, request, {
      metadata: new Metadata(),
      controller: new AbortController(),
      httpPath: "/api/v1/echo",
      deadline: Number.POSITIVE_INFINITY,
    });
    if (!("message" in call.result)) throw new Error(`Echo failed: ${String((call.result as { error: unknown }).error)}`);
  };
}

/** ns per call of one trial: CALLS calls, CONCURRENCY at a time. */
async function trial(invoke: Invoke): Promise<number> {
  const batch = new Array<Promise<unknown>>(CONCURRENCY);
  const start = process.hrtime.bigint();
  for (let done = 0; done < CALLS; done += CONCURRENCY) {
    for (let i = 0; i < CONCURRENCY; i++) batch[i] = invoke();
    await Promise.all(batch);
  }
  return Number(process.hrtime.bigint() - start) / CALLS;
}

const deps = { reporter: { report() {} }, tracing: false, services: [serviceImpl] };
const names = [...defaultInterceptors(loadConfig({}), deps).map((e) => e.name), "metrics"];
const variants: [string, Invoke][] = [
  ["full default chain", chainVariant({})],
  ["no interceptor (invoker + handler only)", chainVariant({}, () => false)],
  ...names.map((n): [string, Invoke] => [`without ${n}`, chainVariant({}, (e) => e.name !== n)]),
  ["response-time line for errors only", chainVariant({ RESPONSE_TIME_LOG_ERROR_ONLY: "true" })],
];

/** Building blocks, timed alone (sync, CALLS each). */
const request = create(EchoRequestSchema, { message: "The quick brown fox jumps over the lazy dog" });
const response = create(EchoResponseSchema, { message: request.message, traceId: randomUUID(), receivedAt: timestampNow() });
const json = toJsonString(EchoRequestSchema, request);
const blocks: [string, () => unknown][] = [
  ["new GrpcError (captures a stack)", () => new GrpcError(Code.DEADLINE_EXCEEDED, "deadline exceeded")],
  ["new AbortController + its signal", () => new AbortController().signal],
  [
    "abort(new Error), 1 listener (gRPC adapter)",
    () => {
      const c = new AbortController();
      c.signal.addEventListener("abort", () => {}, { once: true });
      c.abort(new Error("call cancelled"));
      return c;
    },
  ],
  ["setTimeout + clearTimeout", () => clearTimeout(setTimeout(() => {}, 60_000))],
  ["randomUUID", () => randomUUID()],
  ["new Metadata", () => new Metadata()],
  ["fromJsonString(EchoRequest)", () => fromJsonString(EchoRequestSchema, json)],
  ["toJsonString(EchoResponse)", () => toJsonString(EchoResponseSchema, response, { alwaysEmitImplicit: true })],
  ["new Date().toISOString()", () => new Date().toISOString()],
];

/** Keeps every result reachable, so the JIT cannot drop a call whose value is unused. */
const sink: unknown[] = new Array(16);

function syncTrial(fn: () => unknown): number {
  const start = process.hrtime.bigint();
  for (let i = 0; i < CALLS; i++) sink[i & 15] = fn();
  return Number(process.hrtime.bigint() - start) / CALLS;
}

const best = new Map<string, number>();
const keep = (name: string, ns: number) => best.set(name, Math.min(best.get(name) ?? Number.POSITIVE_INFINITY, ns));
for (const [, invoke] of variants) await trial(invoke); // warm-up
for (let t = 0; t < TRIALS; t++) {
  for (const [name, invoke] of variants) keep(name, await trial(invoke));
  for (const [name, fn] of blocks) keep(name, syncTrial(fn));
  process.stderr.write(`  · trial ${t + 1}/${TRIALS}\n`);
}

const full = best.get("full default chain")!;
const fmt = (ns: number) => `${(ns / 1000).toFixed(2)} µs`.padStart(10);
process.stdout.write(`\nEcho through the in-process invoker, ${CONCURRENCY} calls in flight, best of ${TRIALS} trials of ${CALLS}\n`);
for (const [name] of variants) {
  const ns = best.get(name)!;
  const note = name.startsWith("without ") || name.startsWith("response-time") ? `  saves ${fmt(full - ns).trim()}` : "";
  process.stdout.write(`  ${name.padEnd(44)}${fmt(ns)}${note}\n`);
}
process.stdout.write("\nbuilding blocks, one call each\n");
for (const [name] of blocks) process.stdout.write(`  ${name.padEnd(44)}${fmt(best.get(name)!)}\n`);
process.exit();
