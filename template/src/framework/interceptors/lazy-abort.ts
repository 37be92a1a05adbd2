/**
 * An AbortController whose real controller and signal are made only when the signal is first asked
 * for. Every call needs one, most handlers never read it, and a controller with its signal costs
 * about 2 µs; aborting before anyone asked is a flag, and the signal made later is already aborted.
 */
export class LazyAbortController {
  #controller: AbortController | undefined;
  #aborted = false;
  #reason: unknown;

  get signal(): AbortSignal {
    if (this.#controller === undefined) {
      this.#controller = new AbortController();
      if (this.#aborted) this.#controller.abort(this.#reason);
    }
    return this.#controller.signal;
  }

  /** Like `signal.aborted`, without making the signal. */
  get aborted(): boolean {
    return this.#aborted;
  }

  /** The first call wins, as with AbortController. */
  abort(reason?: unknown): void {
    if (this.#aborted) return;
    this.#aborted = true;
    this.#reason = reason;
    this.#controller?.abort(reason);
  }
}

/** Either kind of controller: the transports pass a lazy one, tests and custom transports may pass a real one. */
export type CallAbortController = AbortController | LazyAbortController;

export function isAborted(controller: CallAbortController): boolean {
  return controller instanceof LazyAbortController ? controller.aborted : controller.signal.aborted;
}
