/**
 * Cancellation a transport detects on its own (a gRPC client's cancel): polled through `cancelled`,
 * and listened to only once someone asks for the signal, so a call nobody watches adds no listener.
 */
export interface CancelSource {
  readonly cancelled: boolean;
  onCancel(listener: () => void): void;
  /** The abort reason of a cancel from this source. */
  readonly reason: unknown;
}

/**
 * An AbortController whose real controller and signal are made only when the signal is first asked
 * for. Every call needs one, most handlers never read it, and a controller with its signal costs
 * about 2 µs; aborting before anyone asked is a flag, and the signal made later is already aborted.
 * One per call: TypeScript-private fields, which V8 defines more cheaply than #private ones (see CallContext).
 */
export class LazyAbortController {
  private readonly _source: CancelSource | undefined;
  private _controller: AbortController | undefined;
  private _aborted = false;
  private _reason: unknown;

  constructor(source?: CancelSource) {
    this._source = source;
  }

  get signal(): AbortSignal {
    if (this._controller === undefined) {
      const controller = new AbortController();
      if (this.aborted) controller.abort(this._reason);
      else this._source?.onCancel(() => this.abort(this._source?.reason));
      this._controller = controller;
    }
    return this._controller.signal;
  }

  /** Like `signal.aborted`, without making the signal. A cancel the source reports counts (and stays). */
  get aborted(): boolean {
    if (!this._aborted && this._source?.cancelled) this.abort(this._source.reason);
    return this._aborted;
  }

  /** The first call wins, as with AbortController. */
  abort(reason?: unknown): void {
    if (this._aborted) return;
    this._aborted = true;
    this._reason = reason;
    this._controller?.abort(reason);
  }
}

/** Either kind of controller: the transports pass a lazy one, tests and custom transports may pass a real one. */
export type CallAbortController = AbortController | LazyAbortController;

export function isAborted(controller: CallAbortController): boolean {
  return controller instanceof LazyAbortController ? controller.aborted : controller.signal.aborted;
}
