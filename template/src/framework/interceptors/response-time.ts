import { type Stage, staged } from "../call/chain.js";
import { Code, codeName, statusCode } from "../call/status.js";
import type { Call, Interceptor } from "../call/types.js";
import { writeCallLine, writeResponseTimeLine } from "../logging/call-line.js";
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
      writeResponseTimeLine(call.ctx, codeName(code), took_ms);
      return;
    }
    const msgs_received = call.requests ? call.requests.received : 1;
    writeCallLine(call.ctx, { grpcCode: codeName(code), took_ms, msgs_received, msgs_sent: sent }, "response time");
  };
  // A unary call is a stage: its start taken on entry, its line written from the exits.
  const unary: Stage = {
    timed: true,
    answered: (call, _result, start) => log(call, start, undefined),
    failed: (call, err, start) => {
      log(call, start, err);
      return err;
    },
  };
  return staged(
    (method) => (method.kind === "unary" ? unary : undefined),
    (next) => async (call) => {
      const start = performance.now();
      let result: Awaited<ReturnType<typeof next>>;
      try {
        result = await next(call);
      } catch (err) {
        log(call, start, err, 0);
        throw err;
      }
      return observe(result, (error, sent) => log(call, start, error, sent));
    },
  );
}
