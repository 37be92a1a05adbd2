import { staged } from "../call/chain.js";
import type { CallContext } from "../call/context.js";
import { asGrpcError, Code, GrpcError } from "../call/status.js";
import { type Interceptor, streamsResponses } from "../call/types.js";
import { mapStreamErrors } from "./observe.js";

/**
 * Panic recovery, innermost: anything thrown that is not a status becomes INTERNAL
 * "internal error". The real message and stack go to the log, never to the client,
 * and the process keeps serving.
 */
export const recovery: Interceptor = staged(
  // A single response: no stream to map; the error is mapped as the stage's exit.
  (method) => (streamsResponses(method.kind) ? undefined : { failed: (call, err) => recover(err, call.ctx) }),
  (next) => async (call) => {
    try {
      return mapStreamErrors(await next(call), (err) => recover(err, call.ctx));
    } catch (err) {
      throw recover(err, call.ctx);
    }
  },
);

function recover(err: unknown, ctx: CallContext): GrpcError {
  const status = asGrpcError(err);
  if (status) return status;
  // The call was cancelled (client gone, deadline, force-stop) and the handler stopped on its signal: not a bug.
  if (ctx.aborted) {
    // Aborted with a status (the deadline, a shutdown, an interceptor's): the call ends with the code its client got.
    const reason = asGrpcError(ctx.signal.reason);
    if (reason) return reason;
    const code = ctx.abortCode();
    return new GrpcError(code, code === Code.DEADLINE_EXCEEDED ? "deadline exceeded" : "call cancelled", { cause: err });
  }
  ctx.logger.error({ err }, "handler failed; returning INTERNAL");
  return new GrpcError(Code.INTERNAL, "internal error", { cause: err });
}
