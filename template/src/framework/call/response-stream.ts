import type { Message } from "@bufbuild/protobuf";
import type { CallResult } from "./types.js";

type OnSend = (message: Message, index: number) => void;
type OnEnd = (error: unknown, sent: number) => void;
type MapError = (error: unknown) => unknown;

/**
 * The outgoing messages of a server-streaming or bidi call, with the interceptors' hooks on it.
 *
 * Interceptors that watch a stream (count its messages, log or trace its end, map its errors) add
 * hooks to this one object rather than each wrapping the stream in a generator: one wrapper per call,
 * so a message costs the same whatever the number of interceptors. Hooks run in the order they were
 * added, which is innermost interceptor first, as nested wrappers would. `ResponseStream.of()` reuses
 * the stream when an interceptor inside already made it one.
 */
export class ResponseStream implements AsyncIterableIterator<Message> {
  readonly #source: AsyncIterator<Message>;
  readonly #toMessage: ((value: unknown) => Message) | undefined;
  #onSend: OnSend[] | undefined;
  #onEnd: OnEnd[] | undefined;
  #mapError: MapError[] | undefined;
  #sent = 0;
  #ended = false;
  /** Set by `fail()`: every read from then on fails with it. */
  #failure: { readonly error: unknown } | undefined;
  #interruptible = false;
  /** Rejects the read waiting on the source (interruptible streams only). */
  #interrupt: ((err: unknown) => void) | undefined;
  #handlers: [(step: IteratorResult<Message>) => IteratorResult<Message, undefined>, (err: unknown) => never] | undefined;

  /** `toMessage` turns what the source yields into the message sent (the handler step's `create`). */
  constructor(source: AsyncIterable<unknown>, toMessage?: (value: unknown) => Message) {
    this.#source = source[Symbol.asyncIterator]() as AsyncIterator<Message>;
    this.#toMessage = toMessage;
  }

  /** `stream` itself when it is a ResponseStream, else a ResponseStream over it. */
  static of(stream: AsyncIterable<Message>): ResponseStream {
    return stream instanceof ResponseStream ? stream : new ResponseStream(stream);
  }

  /** Messages handed to the transport so far. */
  get sent(): number {
    return this.#sent;
  }

  /** Calls `fn` with each message as the transport takes it. */
  onSend(fn: OnSend): this {
    (this.#onSend ??= []).push(fn);
    return this;
  }

  /**
   * Calls `fn` once when the stream is over: after its last message (error undefined), when it fails
   * (the error, after every `mapError`), or when the transport stops reading early (error undefined;
   * `ctx.aborted` tells whether the client went away).
   */
  onEnd(fn: OnEnd): this {
    (this.#onEnd ??= []).push(fn);
    return this;
  }

  /** Replaces an error the stream throws (recovery turns a bug into INTERNAL here). */
  mapError(fn: MapError): this {
    (this.#mapError ??= []).push(fn);
    return this;
  }

  /**
   * Lets `fail()` end a read that is waiting on the source, at the cost of two more promises per
   * message; the timeout step asks for it on calls that have a deadline.
   */
  interruptible(): this {
    this.#interruptible = true;
    return this;
  }

  /**
   * Ends the stream now with `error` (after every `mapError`), as if the source had thrown it: the read
   * waiting on the source fails with it (if the stream is interruptible), and so does every later read.
   * The source is closed; a handler that ignores its signal may run on until its next `yield`, but the
   * call is over. The timeout step ends a call this way when its deadline passes.
   */
  fail(error: unknown): void {
    if (this.#ended) return;
    const failure = { error: this.#fail(error) };
    this.#failure = failure;
    this.#interrupt?.(failure.error);
    this.#source.return?.()?.catch(() => {}); // the handler's own clean-up failing must not become an unhandled rejection
  }

  [Symbol.asyncIterator](): this {
    return this;
  }

  next(): Promise<IteratorResult<Message, undefined>> {
    if (this.#ended) return this.#failure ? Promise.reject(this.#failure.error) : Promise.resolve({ done: true, value: undefined });
    // One promise per message: `then` on the source's, rather than an async method awaiting it.
    const [onStep, onError] = (this.#handlers ??= [(step) => this.#step(step), (err) => this.#throw(err)]);
    if (!this.#interruptible) return this.#source.next().then(onStep, onError);
    const read = this.#source.next();
    return new Promise((resolve, reject) => {
      this.#interrupt = reject;
      read.then(onStep, onError).then(resolve, reject);
    });
  }

  #step(step: IteratorResult<Message>): IteratorResult<Message, undefined> {
    if (this.#failure !== undefined) throw this.#failure.error; // the source answered after the stream failed
    if (step.done) {
      this.#end(undefined);
      return { done: true, value: undefined };
    }
    if (this.#toMessage !== undefined) {
      try {
        step = { done: false, value: this.#toMessage(step.value) };
      } catch (err) {
        this.#source.return?.()?.catch(() => {}); // the handler's own clean-up failing must not become an unhandled rejection
        this.#throw(err);
      }
    }
    const index = this.#sent++;
    const onSend = this.#onSend;
    if (onSend !== undefined) {
      try {
        for (const fn of onSend) fn(step.value, index);
      } catch (err) {
        this.#source.return?.()?.catch(() => {}); // the handler's own clean-up failing must not become an unhandled rejection
        this.#throw(err);
      }
    }
    return step;
  }

  #throw(err: unknown): never {
    throw this.#failure !== undefined ? this.#failure.error : this.#fail(err);
  }

  /** The transport stopped reading: the handler's generator is closed (its `finally` runs). */
  async return(): Promise<IteratorResult<Message, undefined>> {
    if (this.#ended) return { done: true, value: undefined };
    try {
      await this.#source.return?.();
    } catch (err) {
      throw this.#fail(err);
    }
    this.#end(undefined);
    return { done: true, value: undefined };
  }

  #fail(err: unknown): unknown {
    let error = err;
    if (this.#mapError !== undefined) for (const map of this.#mapError) error = map(error);
    this.#end(error);
    return error;
  }

  #end(error: unknown): void {
    if (this.#ended) return;
    this.#ended = true;
    if (this.#onEnd !== undefined) for (const fn of this.#onEnd) fn(error, this.#sent);
  }
}

/** The result's stream as a ResponseStream (the same object when it already is one); undefined for one message. */
export function responseStreamOf(result: CallResult): ResponseStream | undefined {
  if ("message" in result) return undefined;
  return ResponseStream.of(result.stream);
}
