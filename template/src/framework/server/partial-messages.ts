import type { ServerHttp2Stream } from "node:http2";
import { BaseServerInterceptingCall } from "@grpc/grpc-js/build/src/server-interceptors.js";
import { rootLogger } from "../logging/logger.js";
import type { PartialMessageBudget } from "../overload/partial-messages.js";

/** The budget a gRPC call's stream counts against; set once per call by trackPartialMessages. */
const BUDGET = Symbol("partial message budget");
/** Bytes of the current message received so far, its 5-byte prefix included (0 between messages; -1 once refused or closed). */
const HELD = Symbol("partial message bytes");
/** The stream's 'close' listener is on (added the first time a message spans two reads). */
const HOOKED = Symbol("partial message close hook");

type Tracked = ServerHttp2Stream & { [BUDGET]?: PartialMessageBudget; [HELD]: number; [HOOKED]?: true };

/** What the hook reads of grpc-js's call and its StreamDecoder (private in its types). */
interface DecodingCall {
  stream: Tracked;
  decoder: { readState: number; readSizeRemaining: number; readMessageSize: number; readMessageRemaining: number };
  handleDataFrame(data: Buffer): void;
}
/** StreamDecoder's readState values. */
const READING_SIZE = 1;
const READING_MESSAGE = 2;

let refuseCall: (stream: ServerHttp2Stream) => void = () => {};
let hooked: boolean | undefined;

/**
 * Counts the bytes grpc-js holds of a call's request message not yet whole against the process's
 * PartialMessageBudget, read from its own decoder after each chunk (grpc-js has no hook for it): the bytes of the
 * current message it has so far. A call that would pass the budget is refused (`refuse`: RESOURCE_EXHAUSTED) and its
 * bytes given back at once; a call's bytes are given back when its message completes or its stream closes.
 * Per chunk, a few reads of the decoder's fields and a compare; the budget is touched only when a message spans
 * reads; per call, one property write. If a grpc-js release renames what this reads, start-up logs a warning and
 * nothing is counted (and the budget's test fails).
 */
export function trackPartialMessages(
  refuse: (stream: ServerHttp2Stream) => void,
): ((stream: ServerHttp2Stream, budget: PartialMessageBudget) => void) | undefined {
  refuseCall = refuse;
  if (hooked === undefined) hooked = hookDecoder();
  if (!hooked) return undefined;
  return (stream, budget) => {
    const tracked = stream as Tracked;
    tracked[HELD] = 0;
    tracked[BUDGET] = budget;
  };
}

function hookDecoder(): boolean {
  const proto = BaseServerInterceptingCall.prototype as unknown as Partial<DecodingCall>;
  const original = proto.handleDataFrame;
  if (typeof original !== "function") {
    rootLogger().warn("grpc-js has no handleDataFrame: MAX_PARTIAL_MESSAGE_BYTES is not applied on the gRPC port");
    return false;
  }
  proto.handleDataFrame = function (this: DecodingCall, data: Buffer): void {
    original.call(this, data);
    const stream = this.stream;
    const budget = stream[BUDGET];
    if (budget === undefined) return;
    const before = stream[HELD];
    if (before < 0) return;
    const d = this.decoder;
    const state = d.readState;
    const held =
      state === READING_MESSAGE ? 5 + d.readMessageSize - d.readMessageRemaining : state === READING_SIZE ? 5 - d.readSizeRemaining : 0;
    if (held === before) return;
    if (held < before) {
      budget.give(before - held);
      stream[HELD] = held;
      return;
    }
    if (!budget.take(held - before)) {
      release.call(stream);
      refuseCall(stream);
      return;
    }
    stream[HELD] = held;
    if (stream[HOOKED] !== true) {
      stream[HOOKED] = true;
      stream.on("close", release);
    }
  };
  return true;
}

function release(this: Tracked): void {
  const held = this[HELD];
  if (held > 0) this[BUDGET]?.give(held);
  this[HELD] = -1;
}
