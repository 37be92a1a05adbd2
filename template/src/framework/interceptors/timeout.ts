import { Code, GrpcError } from "../errors/status.js";
import type { Interceptor } from "./types.js";

const deadlineExceeded = () => new GrpcError(Code.DEADLINE_EXCEEDED, "deadline exceeded");

/**
 * Unary calls that arrive without a deadline get `seconds` (0 = none). When the deadline
 * passes, the handler's signal aborts and the caller gets DEADLINE_EXCEEDED at once, even
 * if the handler ignores its signal.
 */
export function defaultTimeout(seconds: number): Interceptor {
  return (next, method) => {
    if (method.kind !== "unary") return next;
    return async (call) => {
      const { ctx } = call;
      if (ctx.deadline === Number.POSITIVE_INFINITY) {
        if (seconds === 0) return next(call);
        ctx.deadline = Date.now() + seconds * 1000;
      }
      const remaining = ctx.deadline - Date.now();
      if (remaining <= 0) throw deadlineExceeded();
      let timer: NodeJS.Timeout | undefined;
      const deadline = new Promise<never>((_, reject) => {
        timer = setTimeout(() => {
          // Made only when the deadline really passes: most calls never need it.
          const expired = deadlineExceeded();
          ctx.abort(expired);
          reject(expired);
        }, remaining);
      });
      try {
        return await Promise.race([next(call), deadline]);
      } finally {
        clearTimeout(timer);
      }
    };
  };
}
