import { callNext } from "../call/chain.js";
import { Code, codeName, statusCode } from "../call/status.js";
import type { Call, Interceptor } from "../call/types.js";
import { writeCallLine } from "../logging/call-line.js";
import { observe } from "./observe.js";

/**
 * One line per call with its method, code and duration; `errorsOnly` keeps just the failures.
 * Streaming calls add the number of messages received and sent (`msgs_received`, `msgs_sent`).
 */
export function responseTimeLog(errorsOnly: boolean): Interceptor {
  const log = (call: Call, start: number, error: unknown, sent?: number) => {
    const code = statusCode(error);
    if (errorsOnly && code === Code.OK) return;
    const took_ms = Math.round((performance.now() - start) * 1000) / 1000;
    if (sent === undefined) {
      writeCallLine(call.ctx, { grpcCode: codeName(code), took_ms }, "response time");
      return;
    }
    const msgs_received = call.requests ? call.requests.received : 1;
    writeCallLine(call.ctx, { grpcCode: codeName(code), took_ms, msgs_received, msgs_sent: sent }, "response time");
  };
  return (next, method) => {
    if (method.kind === "unary") {
      // A promise reaction rather than an async function: one frame and one await fewer per call.
      return (call) => {
        const start = performance.now();
        return callNext(next, call).then(
          (result) => {
            log(call, start, undefined);
            return result;
          },
          (err: unknown) => {
            log(call, start, err);
            throw err;
          },
        );
      };
    }
    return async (call) => {
      const start = performance.now();
      let result: Awaited<ReturnType<typeof next>>;
      try {
        result = await next(call);
      } catch (err) {
        log(call, start, err, 0);
        throw err;
      }
      return observe(result, (error, sent) => log(call, start, error, sent));
    };
  };
}
