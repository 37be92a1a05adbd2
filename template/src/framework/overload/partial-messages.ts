import { rootLogger } from "../logging/logger.js";
import type { ShedReason } from "./guard.js";

/** At most one "refused a call" warning per this many ms; grpc_server_shed_total has every refusal. */
const LOG_INTERVAL_MS = 10_000;

/**
 * The process's budget of bytes held in request messages begun and not yet whole, over every call, stream and
 * connection of every port (MAX_PARTIAL_MESSAGE_BYTES). A message's bytes are buffered until its last one
 * arrives: a client that announces a large message, sends most of it and stalls holds them until a time limit
 * ends the call, and many such calls (GRPC_MAX_CONCURRENT_STREAMS per connection, GRPC_MAX_CONNECTIONS
 * connections) hold far more than the process has. Past the budget, the call adding bytes is refused with
 * RESOURCE_EXHAUSTED and its bytes given back; bytes are given back as a message completes or its call ends.
 *
 * Per message, a counter add and subtract; nothing at all for a message that arrives in one read.
 */
export class PartialMessageBudget {
  /** MAX_PARTIAL_MESSAGE_BYTES; 0: no budget (`enabled` is false and the transports do not count). */
  readonly limit: number;
  readonly enabled: boolean;
  /** Bytes held now in unfinished messages (the `grpc_server_partial_message_bytes` gauge). */
  held = 0;
  readonly #onShed: (reason: ShedReason) => void;
  #loggedAt = Number.NEGATIVE_INFINITY;

  constructor(limit: number, onShed: (reason: ShedReason) => void = () => {}) {
    this.limit = limit;
    this.enabled = limit > 0;
    this.#onShed = onShed;
  }

  /** Adds `bytes` of an unfinished message, unless that passes the budget: then nothing is added and the caller refuses its call. */
  take(bytes: number): boolean {
    if (this.held + bytes <= this.limit) {
      this.held += bytes;
      return true;
    }
    this.#onShed("partial_messages");
    const now = performance.now();
    if (now - this.#loggedAt >= LOG_INTERVAL_MS) {
      this.#loggedAt = now;
      rootLogger().warn(
        { held_bytes: this.held, limit_bytes: this.limit },
        "refusing calls with RESOURCE_EXHAUSTED: unfinished request messages hold MAX_PARTIAL_MESSAGE_BYTES",
      );
    }
    return false;
  }

  /** Gives back bytes taken: their message completed, or its call ended. */
  give(bytes: number): void {
    this.held -= bytes;
  }
}

/** Why a call whose request message would pass MAX_PARTIAL_MESSAGE_BYTES is refused. */
export const MESSAGES_HELD = "request messages in progress hold the server's MAX_PARTIAL_MESSAGE_BYTES: try again later";

/** Why a request whose body would pass MAX_PARTIAL_MESSAGE_BYTES is refused. */
export const BODIES_HELD = "the server holds too many unfinished request bodies: try again later";

/**
 * The bytes one HTTP request body holds against the budget while not yet whole (the HTTP port's body readers),
 * given back once it is whole, refused or gone. Made only for a body that did not arrive in one read.
 */
export class HeldBody {
  #held = 0;
  readonly #budget: PartialMessageBudget;
  readonly #req: NodeJS.EventEmitter;

  constructor(budget: PartialMessageBudget, req: NodeJS.EventEmitter) {
    this.#budget = budget;
    this.#req = req;
  }

  /** Counts a chunk of the body; false, counting nothing, past the budget (the reader then refuses the request). */
  add(bytes: number): boolean {
    if (!this.#budget.take(bytes)) return false;
    // A client that resets the request mid-body ends it with neither end nor (always) an error.
    if (this.#held === 0) this.#req.once("close", this.release);
    this.#held += bytes;
    return true;
  }

  /** Gives the bytes back: the body is whole, refused or gone. */
  readonly release = (): void => {
    if (this.#held === 0) return;
    this.#req.removeListener("close", this.release);
    this.#budget.give(this.#held);
    this.#held = 0;
  };
}
