import { ResponseStream } from "../call/response-stream.js";
import type { CallResult } from "../call/types.js";

/**
 * Calls `onEnd` once when the call is over: at once for a single message, after the last message,
 * the error or the early return of a stream. Lets an interceptor treat every kind alike without
 * buffering anything; a stream is hooked, not wrapped again (see ResponseStream).
 */
export function observe(result: CallResult, onEnd: (error: unknown, messages: number) => void): CallResult {
  if ("message" in result) {
    onEnd(undefined, 1);
    return result;
  }
  const stream = ResponseStream.of(result.stream).onEnd(onEnd);
  return stream === result.stream ? result : { stream };
}

/** Maps every error a stream throws, so a mid-stream failure gets the same treatment as a unary one. */
export function mapStreamErrors(result: CallResult, map: (error: unknown) => unknown): CallResult {
  if ("message" in result) return result;
  const stream = ResponseStream.of(result.stream).mapError(map);
  return stream === result.stream ? result : { stream };
}
