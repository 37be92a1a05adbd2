import type { Metadata } from "@grpc/grpc-js";
import { type Context, context, propagation, type Span, SpanKind, SpanStatusCode, type TextMapGetter, trace } from "@opentelemetry/api";
import type { CallContext } from "../call/context.js";
import { ResponseStream } from "../call/response-stream.js";
import { Code, codeName, statusCode } from "../call/status.js";
import type { Interceptor } from "../call/types.js";
import { observe } from "./observe.js";

/** Reads W3C `traceparent`/`tracestate` from gRPC metadata (HTTP headers arrive there too). */
const metadataGetter: TextMapGetter<Metadata> = {
  keys: (md) => Object.keys(md.getMap()),
  get: (md, key) => {
    const value = md.get(key)[0];
    return typeof value === "string" ? value : undefined;
  },
};

function end(span: Span, ctx: CallContext, error: unknown): void {
  // Known only now: the trace-ID interceptor runs inside this one.
  span.setAttribute("framework.trace_id", ctx.traceId);
  const code = statusCode(error);
  span.setAttribute("rpc.grpc.status_code", code);
  if (code !== Code.OK) span.setStatus({ code: SpanStatusCode.ERROR, message: codeName(code) });
  span.end();
}

/**
 * A server span per call, child of the caller's `traceparent` when there is one, carrying
 * the framework's trace ID as `framework.trace_id`. Without tracing configured this
 * interceptor is not in the chain at all. The span covers the whole call, streams included.
 * It is the first interceptor, so every call has its span (those auth refuses too) and every
 * log line of the call carries the span's W3C `trace_id` and `span_id` (added to the call's
 * log fields before anything else runs), which take on-call from a log line to its trace.
 */
export function tracing(): Interceptor {
  const tracer = trace.getTracer("create-grpc-svc");
  return (next, method) => {
    const attributes = { "rpc.system": "grpc", "rpc.service": method.service, "rpc.method": method.name };
    const name = `${method.service}/${method.name}`;
    const streaming = method.kind !== "unary";
    return async (call) => {
      const parent: Context = propagation.extract(context.active(), call.ctx.metadata, metadataGetter);
      const span = tracer.startSpan(name, { kind: SpanKind.SERVER, attributes }, parent);
      const { traceId, spanId } = span.spanContext();
      call.ctx.addToContext("trace_id", traceId);
      call.ctx.addToContext("span_id", spanId);
      // One span per call, with an event per message of a stream (OpenTelemetry's RPC conventions).
      call.requests?.inspect((_message, index) => {
        span.addEvent("message", { "rpc.message.type": "RECEIVED", "rpc.message.id": index + 1 });
      });
      try {
        const result = await context.with(trace.setSpan(parent, span), () => next(call));
        if (!streaming || "message" in result) return observe(result, (error) => end(span, call.ctx, error));
        const stream = ResponseStream.of(result.stream)
          .onSend((_message, index) => {
            span.addEvent("message", { "rpc.message.type": "SENT", "rpc.message.id": index + 1 });
          })
          .onEnd((error) => end(span, call.ctx, error));
        return stream === result.stream ? result : { stream };
      } catch (err) {
        end(span, call.ctx, err);
        throw err;
      }
    };
  };
}
