import type { EventEmitter } from "node:events";

/**
 * Resolves once `stream` emits `drain` (it takes writes again), or `end`, the event after which it never will
 * (`close` for an HTTP response or an HTTP/2 stream, `cancelled` for a grpc-js call): a writer waiting for a
 * full buffer to empty is never left hanging by a peer that went away. Both listeners are removed either way.
 */
export function drained(stream: EventEmitter, end: string): Promise<void> {
  return new Promise((resolve) => {
    const done = () => {
      stream.off("drain", done);
      stream.off(end, done);
      resolve();
    };
    stream.on("drain", done);
    stream.on(end, done);
  });
}
