import { Code as ConnectCode, ConnectError } from "@connectrpc/connect";
import { MESSAGES_HELD, type PartialMessageBudget } from "../overload/partial-messages.js";

/**
 * A Connect or gRPC-Web request body as Connect's handler reads it (gRPC-Web text once decoded), under the HTTP
 * port's two limits on a body that Connect reads message by message:
 * - MAX_PARTIAL_MESSAGE_BYTES (`budget`): the bytes of an enveloped message (a flag byte, a 4-byte length, the
 *   message) not yet whole are counted against it, as on the gRPC port (Connect buffers them until the message is
 *   whole). Past it the read fails with RESOURCE_EXHAUSTED, which Connect answers in the protocol's form; the bytes
 *   are given back as messages complete and when the body ends either way.
 * - the idle limit of a streamed body (`abort`): a read waiting then fails with the reason, and so does every read
 *   after (Connect decodes the body as the call reads it, so the call ends with that error).
 *
 * Written by hand, one promise a chunk, not as async generators: one such layer a limit cost several promises a
 * chunk, and racing each read against an abort promise (`Promise.race`) left a reaction on it holding every chunk
 * for as long as the call lasted (a client-streaming call over HTTP/2 grew the heap by ~0.5 KB a message).
 */
export class GuardedBody implements AsyncIterableIterator<Uint8Array> {
  readonly #source: AsyncIterator<Uint8Array>;
  readonly #budget: PartialMessageBudget | undefined;
  /** Bytes held of the message not yet whole, its prefix included, and its length once the prefix is in. */
  #held = 0;
  #size = 0;
  #aborted = false;
  #reason: unknown;
  /** The reader called return(): a chunk a read still waiting gets is passed on uncounted (nothing would give it back). */
  #left = false;
  /** Fails the read waiting, if any (only while one waits: it would otherwise keep the last chunk's promise). */
  #fail: ((reason: unknown) => void) | undefined;

  constructor(body: AsyncIterable<Uint8Array>, budget: PartialMessageBudget | undefined) {
    this.#source = body[Symbol.asyncIterator]();
    this.#budget = budget;
  }

  /** Whether abort() has been called. */
  get aborted(): boolean {
    return this.#aborted;
  }

  /** Fails the read waiting, if any, and every read after, with `reason`. */
  abort(reason: unknown): void {
    if (this.#aborted) return;
    this.#aborted = true;
    this.#reason = reason;
    this.#release();
    this.#fail?.(reason);
    this.#fail = undefined;
  }

  [Symbol.asyncIterator](): this {
    return this;
  }

  next(): Promise<IteratorResult<Uint8Array>> {
    if (this.#aborted) return Promise.reject(this.#reason);
    return new Promise((resolve, reject) => {
      this.#fail = reject;
      this.#source.next().then(
        (result) => {
          this.#fail = undefined;
          if (this.#aborted) return; // already failed with the abort's reason
          if (result.done === true || this.#left) this.#release();
          else if (this.#budget !== undefined && !this.#count(result.value, this.#budget)) {
            // Connect's own error: Connect reads a unary body itself, and answers any other error as internal.
            const refused = new ConnectError(MESSAGES_HELD, ConnectCode.ResourceExhausted);
            this.abort(refused);
            reject(refused);
            return;
          }
          resolve(result);
        },
        (err: unknown) => {
          this.#fail = undefined;
          this.#release();
          reject(err);
        },
      );
    });
  }

  return(): Promise<IteratorResult<Uint8Array>> {
    this.#left = true;
    this.#fail = undefined;
    this.#release();
    this.#source.return?.()?.catch(() => {});
    return Promise.resolve({ done: true, value: undefined });
  }

  /** Counts a chunk's bytes of messages not yet whole; false if the budget has no room for them. */
  #count(chunk: Uint8Array, budget: PartialMessageBudget): boolean {
    const before = this.#held;
    let held = before;
    let size = this.#size;
    const length = chunk.byteLength;
    for (let at = 0; at < length;) {
      if (held < 5) {
        if (held > 0) size = size * 256 + chunk[at]!;
        held++;
        at++;
      } else {
        const take = Math.min(length - at, size + 5 - held);
        held += take;
        at += take;
      }
      if (held >= 5 && held === size + 5) {
        held = 0;
        size = 0;
      }
    }
    if (held > before && !budget.take(held - before)) return false;
    if (held < before) budget.give(before - held);
    this.#held = held;
    this.#size = size;
    return true;
  }

  /** Gives back the bytes held: the body ended, failed or was left. */
  #release(): void {
    if (this.#held > 0) this.#budget?.give(this.#held);
    this.#held = 0;
  }
}
