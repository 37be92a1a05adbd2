import { MAX_TIMER_MS } from "../call/deadline.js";
import { ResponseStream } from "../call/response-stream.js";
import { Code, GrpcError } from "../call/status.js";
import type { CallResult, Interceptor } from "../call/types.js";

const deadlineExceeded = () => new GrpcError(Code.DEADLINE_EXCEEDED, "deadline exceeded");

/**
 * Unary calls that arrive without a deadline get `seconds` (0 = none). A deadline covers the whole
 * call, whatever its kind: when it passes, the handler's signal aborts and the caller gets
 * DEADLINE_EXCEEDED at once, on every transport, even if the handler ignores its signal: the call is
 * ended through its stream objects (the handler's pending read of a request fails, and the response
 * stream fails), not left to each transport.
 */
export function defaultTimeout(seconds: number): Interceptor {
  return (next, method) => {
    const defaultSeconds = method.kind === "unary" ? seconds : 0;
    const streams = method.kind === "server_streaming" || method.kind === "bidi_streaming";
    return (call) => {
      const { ctx } = call;
      if (ctx.deadline === Number.POSITIVE_INFINITY) {
        if (defaultSeconds === 0) return next(call);
        ctx.deadline = Date.now() + defaultSeconds * 1000;
      }
      const remaining = ctx.deadline - Date.now();
      if (remaining <= 0) throw deadlineExceeded();
      const requests = call.requests?.interruptible();
      // A deadline further away than a timer holds (a 30-day one) is clamped, not expired at once.
      // One promise settled by whichever comes first, rather than a Promise.race and its extra promises.
      return new Promise<CallResult>((resolve, reject) => {
        let stream: ResponseStream | undefined;
        const timer = setTimeout(
          () => {
            // Made only when the deadline really passes: most calls never need it.
            const expired = deadlineExceeded();
            ctx.abort(expired);
            requests?.fail(expired);
            if (stream) stream.fail(expired);
            else reject(expired);
          },
          Math.min(remaining, MAX_TIMER_MS),
        );
        const settle = (error: unknown, result?: CallResult) => {
          if (result === undefined || !streams || "message" in result) {
            clearTimeout(timer);
            if (result) resolve(result);
            else reject(error);
            return;
          }
          // A stream keeps its deadline until it ends.
          stream = ResponseStream.of(result.stream)
            .interruptible()
            .onEnd(() => clearTimeout(timer));
          resolve(stream === result.stream ? result : { stream });
        };
        next(call).then((result) => settle(undefined, result), settle);
      });
    };
  };
}
