import type { Duplex } from "node:stream";
import type { WebSocket } from "ws";
import type { PartialMessageBudget } from "../overload/partial-messages.js";

/**
 * What ws's Receiver holds of a message not yet whole: bytes read but not yet parsed into a frame, and the
 * payload of the message's frames so far. Neither is in ws's types; ws tells of a message only once it is
 * whole (it assembles the frames itself), and nothing else says what a client keeps the server holding.
 */
interface ReceiverHolding {
  _bufferedBytes: number;
  _messageLength: number;
}

/** The socket's receiver, if this version of ws keeps the fields counted. */
function receiverOf(ws: WebSocket): ReceiverHolding | undefined {
  const receiver = (ws as unknown as { _receiver?: Partial<ReceiverHolding> })._receiver;
  return typeof receiver?._bufferedBytes === "number" && typeof receiver._messageLength === "number"
    ? (receiver as ReceiverHolding)
    : undefined;
}

/**
 * Counts what one WebSocket holds of a request message in progress against MAX_PARTIAL_MESSAGE_BYTES, as the
 * gRPC port and the HTTP bodies do: after each read of the socket (once ws has taken it in), the receiver's
 * unfinished bytes are compared with those counted, so a message that arrives whole in one read is never counted,
 * and a message's frames trickled across reads (or a frame cut short) are. Past the budget, `refuse` ends the
 * call once; a client that sends on after it is dropped. One listener call and two field reads per read.
 */
export class HeldMessageBytes {
  readonly #receiver: ReceiverHolding;
  readonly #budget: PartialMessageBudget;
  readonly #ws: WebSocket;
  #held = 0;
  #refused = false;

  /** Counts `ws`'s message bytes in progress, or returns undefined when this version of ws hides them. */
  static watch(ws: WebSocket, socket: Duplex, budget: PartialMessageBudget, refuse: () => void): HeldMessageBytes | undefined {
    const receiver = receiverOf(ws);
    if (receiver === undefined) return undefined;
    const held = new HeldMessageBytes(ws, receiver, budget);
    // After ws's own listener: the read has been parsed, and any message it completed has been handed on.
    socket.on("data", () => held.#update(refuse));
    return held;
  }

  private constructor(ws: WebSocket, receiver: ReceiverHolding, budget: PartialMessageBudget) {
    this.#ws = ws;
    this.#receiver = receiver;
    this.#budget = budget;
  }

  #update(refuse: () => void): void {
    const now = this.#receiver._bufferedBytes + this.#receiver._messageLength;
    const more = now - this.#held;
    if (more <= 0) {
      if (more < 0) this.#budget.give(-more);
      this.#held = now;
      return;
    }
    if (this.#refused) {
      this.#ws.terminate(); // refused, and sending on: nothing more is read
      return;
    }
    if (!this.#budget.take(more)) {
      this.#refused = true;
      refuse();
      return;
    }
    this.#held = now;
  }

  /** The socket closed: what it held is given back. */
  release(): void {
    this.#budget.give(this.#held);
    this.#held = 0;
  }
}
