import { Code, codeName, statusCode } from "../errors/status.js";
import { observe } from "./observe.js";
import type { Interceptor } from "./types.js";

/** One line per call with its method, code and duration; `errorsOnly` keeps just the failures. */
export function responseTimeLog(errorsOnly: boolean): Interceptor {
  return (next) => async (call) => {
    const start = performance.now();
    const done = (error: unknown) => {
      const code = statusCode(error);
      if (errorsOnly && code === Code.OK) return;
      call.ctx.logger.info({ grpcCode: codeName(code), took_ms: Math.round((performance.now() - start) * 1000) / 1000 }, "response time");
    };
    try {
      return observe(await next(call), done);
    } catch (err) {
      done(err);
      throw err;
    }
  };
}
