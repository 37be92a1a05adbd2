import { callNext } from "../call/chain.js";
import { ResponseStream } from "../call/response-stream.js";
import { Code, statusCode } from "../call/status.js";
import type { Call, Interceptor } from "../call/types.js";
import type { ServerMetrics } from "../metrics/server-metrics.js";

/**
 * gRPC server metrics (go-grpc-prometheus semantics): started, received, sent per message,
 * handled by code and the latency histogram. It wraps the whole chain (the Chain's `around`),
 * where the call enters and leaves the server, so calls the chain rejects count with their code.
 * Each method's series are looked up here, once, when the chain is composed — which also makes
 * them exist at 0 from start-up — so a call costs a few additions and, with the histogram on,
 * two `performance.now()`. With `exemplars` (tracing on), the latency observation keeps the call's
 * W3C trace and span IDs (its log fields, set by the tracing interceptor) as its bucket's exemplar.
 */
export function grpcMetrics(serverMetrics: ServerMetrics, { exemplars = false }: { exemplars?: boolean } = {}): Interceptor {
  return (next, method) => {
    const stats = serverMetrics.method(method);
    const timed = stats.duration !== undefined;
    const end = (call: Call, code: number, start: number): void => {
      if (exemplars) stats.endWithExemplar(code, start, call.ctx.fields.trace_id, call.ctx.fields.span_id);
      else stats.end(code, start);
    };
    if (method.kind === "unary") {
      // A promise reaction rather than an async function: one frame and one await fewer per call.
      return (call) => {
        stats.started.value++;
        stats.received.value++;
        const start = timed ? performance.now() : 0;
        return callNext(next, call).then(
          (result) => {
            stats.sent.value++;
            end(call, Code.OK, start);
            return result;
          },
          (err: unknown) => {
            end(call, statusCode(err), start);
            throw err;
          },
        );
      };
    }
    const countReceived = () => {
      stats.received.value++;
    };
    const countSent = () => {
      stats.sent.value++;
    };
    return async (call) => {
      stats.started.value++;
      // Counted as each message arrives (or goes out), so a scrape sees a long stream's progress.
      if (call.requests) call.requests.inspect(countReceived);
      else stats.received.value++;
      const start = timed ? performance.now() : 0;
      let result: Awaited<ReturnType<typeof next>>;
      try {
        result = await next(call);
      } catch (err) {
        end(call, statusCode(err), start);
        throw err;
      }
      if ("message" in result) {
        stats.sent.value++;
        end(call, Code.OK, start);
        return result;
      }
      const { ctx } = call;
      const stream = ResponseStream.of(result.stream)
        .onSend(countSent)
        .onEnd((error) => {
          // Neither finished nor failed but the consumer stopped reading: the client went away, or it read what it wanted.
          const code = error !== undefined ? statusCode(error) : ctx.aborted ? ctx.abortCode() : Code.OK;
          end(call, code, start);
        });
      return stream === result.stream ? result : { stream };
    };
  };
}
