import type { Message } from "@bufbuild/protobuf";

type Inspector = (message: Message, index: number) => void;

type Step = IteratorResult<Message, undefined>;

const DONE: IteratorReturnResult<undefined> = Object.freeze({ done: true, value: undefined });

/**
 * The incoming messages of a client-streaming or bidi call, as the handler sees them.
 *
 * It pulls one message from the transport per read, so a handler that reads slowly holds the client
 * back (flow control) and one that stops reading stops the transport reading. Interceptors look at
 * each message with `inspect()` instead of each wrapping the stream in a generator of its own: one
 * object per call, whatever the number of interceptors. An inspector that throws ends the stream
 * with that error (`error` keeps it, so the call fails with it even if the handler swallows it).
 */
export class RequestStream implements AsyncIterableIterator<Message> {
  readonly #source: AsyncIterator<Message>;
  #inspectors: Inspector[] | undefined;
  #received = 0;
  #error: unknown;
  #failed = false;
  #closed = false;
  #interruptible = false;
  /** Rejects the read waiting on the source (interruptible streams only). */
  #interrupt: ((err: unknown) => void) | undefined;
  #handlers: [(step: IteratorResult<Message>) => Step | Promise<Step>, (err: unknown) => never | Promise<never>] | undefined;
  /** Set while `atEnd` decides whether the end of input is a half-close: later reads wait for it too. */
  #ending: Promise<Step> | undefined;
  readonly #atEnd: (() => void | Promise<void>) | undefined;
  readonly #sourceError: ((err: unknown) => unknown) | undefined;

  /**
   * `source` yields the decoded messages and ends when the client half-closes. `atEnd` runs when it
   * ends and may throw (or reject) to say the end is not a half-close (the transport's deadline or a
   * cancel, say); the handler's read waits for it. `sourceError` turns an error of the source into
   * the one the call fails with (the status the transport already answered, say), or resolves to it; it
   * runs only on that failure path.
   */
  constructor(source: AsyncIterator<Message>, atEnd?: () => void | Promise<void>, sourceError?: (err: unknown) => unknown) {
    this.#source = source;
    this.#atEnd = atEnd;
    this.#sourceError = sourceError;
  }

  /** Messages handed to the handler so far. */
  get received(): number {
    return this.#received;
  }

  /** Whether the stream failed (an inspector or the transport threw); `error` says why. */
  get failed(): boolean {
    return this.#failed;
  }

  get error(): unknown {
    return this.#error;
  }

  /** Calls `fn` for each message before the handler gets it; a throw ends the call with that error. */
  inspect(fn: Inspector): void {
    (this.#inspectors ??= []).push(fn);
  }

  /**
   * Lets `fail()` end a read that is waiting on the transport, at the cost of two more promises per
   * message; the timeout step asks for it on calls that have a deadline.
   */
  interruptible(): this {
    this.#interruptible = true;
    return this;
  }

  /**
   * Ends the input now with `error`: the handler's read waiting on the transport fails with it (if the
   * stream is interruptible), and so does every later read; the transport stops reading. The timeout
   * step ends a call's input this way when its deadline passes, whether or not the handler watches its signal.
   */
  fail(error: unknown): void {
    if (this.#failed) return;
    this.#failed = true;
    this.#error = error;
    this.#interrupt?.(error);
    this.#stopSource();
  }

  [Symbol.asyncIterator](): this {
    return this;
  }

  next(): Promise<IteratorResult<Message, undefined>> {
    if (this.#failed) return Promise.reject(this.#error);
    if (this.#closed) return this.#ending ?? Promise.resolve(DONE);
    // One promise per message: `then` on the source's, rather than an async method awaiting it.
    const [onStep, onError] = (this.#handlers ??= [(step) => this.#step(step), (err) => this.#failWith(err)]);
    if (!this.#interruptible) return this.#source.next().then(onStep, onError);
    const read = this.#source.next();
    return new Promise((resolve, reject) => {
      this.#interrupt = reject;
      read.then(onStep, onError).then(resolve, reject);
    });
  }

  #step(step: IteratorResult<Message>): Step | Promise<Step> {
    if (this.#failed) throw this.#error; // the transport answered after the stream failed
    if (step.done) return this.#end();
    const index = this.#received++;
    const inspectors = this.#inspectors;
    if (inspectors !== undefined) {
      try {
        for (const inspect of inspectors) inspect(step.value, index);
      } catch (err) {
        this.#stopSource();
        this.#fail(err);
      }
    }
    return step;
  }

  #end(): Step | Promise<Step> {
    this.#closed = true;
    let ending: void | Promise<void>;
    try {
      ending = this.#atEnd?.();
    } catch (err) {
      this.#fail(err);
    }
    if (ending === undefined) return DONE;
    this.#ending = ending.then(
      () => DONE,
      (err: unknown) => this.#fail(err),
    );
    return this.#ending;
  }

  /** The handler stopped reading (`break`, an early answer or the end of the call): the rest is discarded. */
  async return(): Promise<IteratorResult<Message, undefined>> {
    this.#stopSource();
    return DONE;
  }

  /** The source failed: with its own error, or the one `sourceError` makes of it (which may take a round trip to decide). */
  #failWith(err: unknown): never | Promise<never> {
    if (this.#failed || this.#sourceError === undefined) return this.#fail(this.#failed ? this.#error : err);
    const mapped = this.#sourceError(err);
    if (!(mapped instanceof Promise)) return this.#fail(mapped);
    this.#closed = true; // later reads wait for the same answer
    this.#ending = mapped.then((error: unknown) => this.#fail(error));
    return this.#ending as Promise<never>;
  }

  #fail(err: unknown): never {
    this.#failed = true;
    this.#error = err;
    throw err;
  }

  #stopSource(): void {
    if (this.#closed) return;
    this.#closed = true;
    try {
      this.#source.return?.()?.catch?.(() => {});
    } catch {
      // The transport's stream is already gone.
    }
  }
}
