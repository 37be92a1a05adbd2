import { MAX_TIMER_MS } from "../call/deadline.js";
import { Code, GrpcError } from "../call/status.js";
import type { CallResult, Interceptor } from "../call/types.js";

const deadlineExceeded = () => new GrpcError(Code.DEADLINE_EXCEEDED, "deadline exceeded");

/**
 * Unary calls that arrive without a deadline get `seconds` (0 = none). When the deadline
 * passes, the handler's signal aborts and the caller gets DEADLINE_EXCEEDED at once, even
 * if the handler ignores its signal.
 */
export function defaultTimeout(seconds: number): Interceptor {
  return (next, method) => {
    if (method.kind !== "unary") return next;
    return (call) => {
      const { ctx } = call;
      if (ctx.deadline === Number.POSITIVE_INFINITY) {
        if (seconds === 0) return next(call);
        ctx.deadline = Date.now() + seconds * 1000;
      }
      const remaining = ctx.deadline - Date.now();
      if (remaining <= 0) throw deadlineExceeded();
      // A deadline further away than a timer holds (a 30-day one) is clamped, not expired at once.
      // One promise settled by whichever comes first, rather than a Promise.race and its extra promises.
      return new Promise<CallResult>((resolve, reject) => {
        const timer = setTimeout(
          () => {
            // Made only when the deadline really passes: most calls never need it.
            const expired = deadlineExceeded();
            ctx.abort(expired);
            reject(expired);
          },
          Math.min(remaining, MAX_TIMER_MS),
        );
        const settle = (error: unknown, result?: CallResult) => {
          clearTimeout(timer);
          if (result) resolve(result);
          else reject(error);
        };
        next(call).then((result) => settle(undefined, result), settle);
      });
    };
  };
}
