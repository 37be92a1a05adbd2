import type { Readable } from "node:stream";
import type { PartialMessageBudget } from "../overload/partial-messages.js";

/** Bytes of the current message read so far, its 5-byte prefix included (0 between messages; -1 once refused or closed). */
const HELD = Symbol("partial message bytes");
/** The current message's length, from its prefix (as far as read). */
const SIZE = Symbol("partial message size");
/** The stream's 'close' listener is on (added the first time a message spans two reads). */
const HOOKED = Symbol("partial message close hook");

type Tracked<S extends Readable> = S & { [HELD]: number; [SIZE]: number; [HOOKED]?: true };

/** Length-prefixed framing: a flag byte and a 4-byte big-endian length (gRPC, gRPC-Web binary, Connect streaming). */
const PREFIX = 5;

/**
 * Counts the bytes of a stream's length-prefixed request messages (gRPC, gRPC-Web, Connect envelopes) that have
 * arrived while the message is not whole yet, against the process's PartialMessageBudget, reading the same
 * chunks as the decoder that buffers them (grpc-js's StreamDecoder, Connect's envelope reader). Neither library
 * has a hook for this, so the framing is followed here: per chunk, a walk over its message prefixes; the budget
 * is touched only when a message spans reads. A call that would pass the budget is handed to `refuse` (which
 * ends it with RESOURCE_EXHAUSTED in its protocol's form) and its bytes given back at once; a call's bytes are
 * given back when its message completes or its stream closes.
 *
 * The listeners are made once per transport and the state kept on the stream (no allocation per call). The
 * 'data' listener is prepended, which (unlike `on`) does not switch the stream to flowing mode: the decoder's
 * own listener and its pause/resume decide when data flows, as before.
 */
export function partialMessageTracker<S extends Readable>(budget: PartialMessageBudget, refuse: (stream: S) => void): (stream: S) => void {
  function release(this: Tracked<S>): void {
    const held = this[HELD];
    if (held > 0) budget.give(held);
    this[HELD] = -1;
  }
  function onData(this: Tracked<S>, chunk: Buffer): void {
    const before = this[HELD];
    if (before < 0) return;
    let held = before;
    let size = this[SIZE];
    const length = chunk.length;
    let at = 0;
    while (at < length) {
      if (held === 0 && length - at >= PREFIX) {
        size = chunk.readUInt32BE(at + 1);
        held = PREFIX;
        at += PREFIX;
      } else if (held < PREFIX) {
        if (held > 0) size = size * 256 + chunk[at]!;
        held++;
        at++;
      } else {
        const take = Math.min(length - at, size + PREFIX - held);
        held += take;
        at += take;
      }
      if (held === size + PREFIX && held >= PREFIX) {
        held = 0;
        size = 0;
      }
    }
    this[SIZE] = size;
    if (held === before) return;
    if (held > before) {
      if (!budget.take(held - before)) {
        release.call(this);
        refuse(this);
        return;
      }
      if (this[HOOKED] !== true) {
        this[HOOKED] = true;
        this.on("close", release);
      }
    } else budget.give(before - held);
    this[HELD] = held;
  }
  return (stream) => {
    const tracked = stream as Tracked<S>;
    tracked[HELD] = 0;
    tracked[SIZE] = 0;
    stream.prependListener("data", onData);
  };
}
