import type { Message } from "@bufbuild/protobuf";
import type { CallContext } from "../call/context.js";
import { Code, statusCode } from "../call/status.js";
import type { Interceptor } from "../call/types.js";
import type { MethodStats, ServerMetrics } from "../metrics/server-metrics.js";

/**
 * gRPC server metrics (go-grpc-prometheus semantics): started, received, sent per message,
 * handled by code and the latency histogram. It wraps the whole chain (the Chain's `around`),
 * where the call enters and leaves the server, so calls the chain rejects count with their code.
 * Each method's series are looked up here, once, when the chain is composed — which also makes
 * them exist at 0 from start-up — so a call costs a few additions and, with the histogram on,
 * two `performance.now()`.
 */
export function grpcMetrics(serverMetrics: ServerMetrics): Interceptor {
  return (next, method) => {
    const stats = serverMetrics.method(method);
    const timed = stats.duration !== undefined;
    if (method.kind === "unary") {
      return async (call) => {
        stats.started.value++;
        stats.received.value++;
        const start = timed ? performance.now() : 0;
        try {
          const result = await next(call);
          stats.sent.value++;
          stats.end(Code.OK, start);
          return result;
        } catch (err) {
          stats.end(statusCode(err), start);
          throw err;
        }
      };
    }
    return async (call) => {
      stats.started.value++;
      stats.received.value++;
      const start = timed ? performance.now() : 0;
      let result: Awaited<ReturnType<typeof next>>;
      try {
        result = await next(call);
      } catch (err) {
        stats.end(statusCode(err), start);
        throw err;
      }
      if ("message" in result) {
        stats.sent.value++;
        stats.end(Code.OK, start);
        return result;
      }
      return { stream: counted(result.stream, stats, start, call.ctx) };
    };
  };
}

/**
 * Counts each message as it is sent (so a scrape sees a long stream's progress) and the end of
 * the stream: its error's code, CANCELLED/DEADLINE_EXCEEDED when the consumer left because the
 * call was aborted, else OK. Like `observe()`, it ends once, after the last message.
 */
async function* counted(stream: AsyncIterable<Message>, stats: MethodStats, start: number, ctx: CallContext): AsyncGenerator<Message> {
  let code = -1;
  try {
    for await (const message of stream) {
      stats.sent.value++;
      yield message;
    }
    code = Code.OK;
  } catch (err) {
    code = statusCode(err);
    throw err;
  } finally {
    // Neither finished nor failed: the consumer stopped reading early.
    if (code === -1) code = ctx.aborted ? ctx.abortCode() : Code.OK;
    stats.end(code, start);
  }
}
