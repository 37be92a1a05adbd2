import { type Stage, staged } from "../call/chain.js";
import { Code, SHUTTING_DOWN, statusCode } from "../call/status.js";
import { type Call, type Interceptor, streamsResponses } from "../call/types.js";
import type { ErrorReporter } from "../errors/reporter.js";
import { observe } from "./observe.js";

/** Server errors only: a client's mistake (InvalidArgument, NotFound…) is not worth waking anyone. */
const REPORTED = new Set<Code>([Code.UNKNOWN, Code.INTERNAL, Code.DATA_LOSS, Code.UNAVAILABLE]);

/**
 * Sends failed calls of codes Unknown, Internal, DataLoss and Unavailable to the reporter,
 * after the response, so reporting never delays or fails it. Recovery (inside this) has
 * already turned panics into INTERNAL; the original error travels as the status's cause.
 */
export function errorNotification(reporter: ErrorReporter): Interceptor {
  const notify = (call: Call, error: unknown) => {
    if (error === undefined || error === SHUTTING_DOWN) return; // a shutdown is no outage
    const code = statusCode(error);
    if (!REPORTED.has(code)) return;
    const { ctx, method } = call;
    const cause = (error as { cause?: unknown }).cause ?? error;
    setImmediate(() => {
      try {
        Promise.resolve(reporter.report({ error: cause, code, method: method.path, traceId: ctx.traceId, fields: ctx.fields })).catch(
          () => {},
        );
      } catch {
        // A broken reporter must not take the process with it.
      }
    });
  };
  // A single response: the failure is seen as the stage's exit.
  const single: Stage = {
    failed: (call, err) => {
      notify(call, err);
      return err;
    },
  };
  return staged(
    (method) => (streamsResponses(method.kind) ? undefined : single),
    (next) => async (call) => {
      let result: Awaited<ReturnType<typeof next>>;
      try {
        result = await next(call);
      } catch (err) {
        notify(call, err);
        throw err;
      }
      return "message" in result ? result : observe(result, (error) => notify(call, error));
    },
  );
}
