import { Code, codeName, statusCode } from "../call/status.js";
import type { Call, Interceptor } from "../call/types.js";
import { writeCallLine } from "../logging/call-line.js";
import { observe } from "./observe.js";

/** One line per call with its method, code and duration; `errorsOnly` keeps just the failures. */
export function responseTimeLog(errorsOnly: boolean): Interceptor {
  const log = (call: Call, start: number, error: unknown) => {
    const code = statusCode(error);
    if (errorsOnly && code === Code.OK) return;
    writeCallLine(call.ctx, { grpcCode: codeName(code), took_ms: Math.round((performance.now() - start) * 1000) / 1000 }, "response time");
  };
  return (next) => async (call) => {
    const start = performance.now();
    let result: Awaited<ReturnType<typeof next>>;
    try {
      result = await next(call);
    } catch (err) {
      log(call, start, err);
      throw err;
    }
    if ("message" in result) {
      log(call, start, undefined);
      return result;
    }
    return observe(result, (error) => log(call, start, error));
  };
}
