import type { ServerHttp2Session, ServerHttp2Stream } from "node:http2";
import { BaseServerInterceptingCall } from "@grpc/grpc-js/build/src/server-interceptors.js";
import { rootLogger } from "../logging/logger.js";
import type { PartialMessageBudget } from "../overload/partial-messages.js";

/** The budget a connection's calls count against: on each client's session, not on the gateway's own. */
const BUDGET = Symbol("partial message budget");
/**
 * Bytes of a stream's current message received so far, its 5-byte prefix included: absent until a message
 * spans two DATA frames (a call whose messages each fit in one is never written to), then 0 between messages, and
 * -1 once refused, closed or not counted.
 */
const HELD = Symbol("partial message bytes");

type Session = ServerHttp2Session & { [BUDGET]?: PartialMessageBudget | undefined };
type Tracked = ServerHttp2Stream & { [BUDGET]?: PartialMessageBudget; [HELD]?: number };

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
 * Returns what marks a connection's calls as counted (its budget, or undefined for none), once a connection.
 *
 * Per chunk, a few reads of the decoder's fields and a compare; nothing is written to a call's stream until one
 * of its messages spans two DATA frames. (Two fields written on every stream, with the first-message check's second
 * 'stream' listener, cost a unary call 3.8 k instructions under load, most of it in young-generation
 * collections; now under 1 k.) If a grpc-js release renames what this reads, start-up logs a warning and
 * nothing is counted (and the budget's test fails).
 */
export function trackPartialMessages(
  refuse: (stream: ServerHttp2Stream) => void,
): ((session: ServerHttp2Session, budget: PartialMessageBudget | undefined) => void) | undefined {
  refuseCall = refuse;
  if (hooked === undefined) hooked = hookDecoder();
  if (!hooked) return undefined;
  return (session, budget) => {
    (session as Session)[BUDGET] = budget;
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
    const d = this.decoder;
    const state = d.readState;
    const held =
      state === READING_MESSAGE ? 5 + d.readMessageSize - d.readMessageRemaining : state === READING_SIZE ? 5 - d.readSizeRemaining : 0;
    const stream = this.stream;
    let before = stream[HELD];
    if (before === undefined) {
      if (held === 0) return;
      before = startCounting(stream);
    }
    if (held === before || before < 0) return;
    const budget = stream[BUDGET]!;
    if (held < before) {
      budget.give(before - held);
      stream[HELD] = held;
    } else if (budget.take(held - before)) {
      stream[HELD] = held;
    } else {
      release.call(stream);
      refuseCall(stream);
    }
  };
  return true;
}

/**
 * A stream's first message to span two DATA frames: counted from here (0 bytes so far, given back when it
 * closes) if its connection has a budget, else never looked at again. The bytes it holds go on as for any chunk.
 */
function startCounting(stream: Tracked): number {
  const budget = (stream.session as Session | undefined)?.[BUDGET];
  if (budget === undefined) return (stream[HELD] = -1);
  stream[BUDGET] = budget;
  stream.on("close", release);
  return (stream[HELD] = 0);
}

function release(this: Tracked): void {
  const held = this[HELD]!;
  if (held > 0) this[BUDGET]!.give(held);
  this[HELD] = -1;
}
