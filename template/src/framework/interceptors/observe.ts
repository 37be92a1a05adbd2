import type { Message } from "@bufbuild/protobuf";
import type { CallResult } from "../call/types.js";

/**
 * Calls `onEnd` once when the call is over: at once for a unary result, after the
 * last message, the error or the early return of a stream. Lets an interceptor treat
 * unary and streaming calls alike without buffering anything.
 */
export function observe(result: CallResult, onEnd: (error: unknown, messages: number) => void): CallResult {
  if ("message" in result) {
    onEnd(undefined, 1);
    return result;
  }
  return { stream: observeStream(result.stream, onEnd) };
}

async function* observeStream(stream: AsyncIterable<Message>, onEnd: (error: unknown, messages: number) => void): AsyncGenerator<Message> {
  let sent = 0;
  let error: unknown;
  try {
    for await (const message of stream) {
      sent++;
      yield message;
    }
  } catch (err) {
    error = err;
    throw err;
  } finally {
    onEnd(error, sent);
  }
}

/** Maps every error a stream throws, so a mid-stream failure gets the same treatment as a unary one. */
export function mapStreamErrors(result: CallResult, map: (error: unknown) => unknown): CallResult {
  if ("message" in result) return result;
  const stream = result.stream;
  return {
    stream: (async function* () {
      try {
        yield* stream;
      } catch (err) {
        throw map(err);
      }
    })(),
  };
}
