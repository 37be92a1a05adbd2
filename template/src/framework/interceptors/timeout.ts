import type { CallContext } from "../call/context.js";
import { MAX_TIMER_MS } from "../call/deadline.js";
import type { RequestStream } from "../call/request-stream.js";
import { ResponseStream } from "../call/response-stream.js";
import { Code, GrpcError } from "../call/status.js";
import type { CallResult, Interceptor } from "../call/types.js";

const deadlineExceeded = () => new GrpcError(Code.DEADLINE_EXCEEDED, "deadline exceeded");

// The executor of each call's promise hands its functions over through these: one function for every call,
// not a closure per call.
let capturedResolve: (result: CallResult) => void = () => {};
let capturedReject: (error: unknown) => void = () => {};
function captureSettlers(resolve: (result: CallResult) => void, reject: (error: unknown) => void): void {
  capturedResolve = resolve;
  capturedReject = reject;
}

/** One call waiting on its deadline; made once per call, it holds what the timer needs to end the call. */
class Pending {
  prev: Pending | undefined;
  next: Pending | undefined;
  /** When it expires, in `performance.now()` time (for the shared list). */
  at = 0;
  timer: NodeJS.Timeout | undefined;
  /** The response stream, once the handler returned one: it keeps the deadline until it ends. */
  stream: ResponseStream | undefined;
  /** Settled by whichever comes first, the rest of the chain or the deadline (no Promise.race and its extra promises). */
  readonly promise: Promise<CallResult>;
  readonly resolve: (result: CallResult) => void;
  readonly reject: (error: unknown) => void;
  /** The list it is in: the shared default-deadline one, or the step's list of the others (own timer, or none). */
  list: CallList | undefined;

  constructor(
    readonly ctx: CallContext,
    readonly requests: RequestStream | undefined,
  ) {
    this.promise = new Promise(captureSettlers);
    this.resolve = capturedResolve;
    this.reject = capturedReject;
  }

  /** The call is over (or its stream is): it stops waiting for the deadline. */
  done(): void {
    this.list?.remove(this);
    if (this.timer !== undefined) clearTimeout(this.timer);
  }

  /** The rest of the chain answered: a single message settles the call, a stream keeps the deadline until it ends. */
  settle(result: CallResult | undefined, streams: boolean): void {
    if (result === undefined) {
      this.fail(undefined); // not a result: as before, the call fails
      return;
    }
    if (!streams || "message" in result) {
      this.done();
      this.resolve(result);
      return;
    }
    const stream = ResponseStream.of(result.stream)
      .interruptible()
      .onEnd(() => this.done());
    this.stream = stream;
    this.resolve(stream === result.stream ? result : { stream });
  }

  fail(error: unknown): void {
    this.done();
    this.reject(error);
  }

  /** Ends the call with `reason` (its deadline passed, or shutdown's budget ran out), whatever the handler does. */
  expire(reason?: GrpcError): void {
    // Made only when the deadline really passes: most calls never need it.
    const expired = reason ?? deadlineExceeded();
    this.ctx.abort(expired);
    this.requests?.fail(expired);
    if (this.stream) this.stream.fail(expired);
    else this.reject(expired);
  }
}

function expireByTimer(pending: Pending): void {
  pending.timer = undefined;
  pending.list?.remove(pending);
  pending.expire();
}

/** Calls in the order they came, linked through their own fields: adding and removing one allocates nothing. */
class CallList {
  protected head: Pending | undefined;
  #tail: Pending | undefined;

  add(pending: Pending): void {
    pending.list = this;
    pending.prev = this.#tail;
    if (this.#tail) this.#tail.next = pending;
    else this.head = pending;
    this.#tail = pending;
  }

  remove(pending: Pending): void {
    const { prev, next } = pending;
    if (prev) prev.next = next;
    else if (this.head === pending) this.head = next;
    else return; // not in the list (already expired)
    if (next) next.prev = prev;
    else this.#tail = prev;
    pending.prev = pending.next = undefined;
  }

  /** Ends the HTTP calls with a single response (unary, client-streaming) with `reason`; returns how many. */
  endHttpCalls(reason: GrpcError): number {
    let ended = 0;
    for (let p = this.head; p !== undefined;) {
      const next = p.next;
      const { transport, method } = p.ctx;
      if (transport === "http" && (method.kind === "unary" || method.kind === "client_streaming")) {
        p.done();
        p.expire(reason);
        ended++;
      }
      p = next;
    }
    return ended;
  }
}

/**
 * The calls given the default timeout, oldest first. They all wait the same time, so they expire in
 * the order they came: one timer, armed for the oldest, does the work of a `setTimeout` and a
 * `clearTimeout` per call (each a timer-list insert and removal and a call into libuv). A call that
 * ends leaves the list; the timer is not moved for it and, when it fires for a call already gone,
 * re-arms for the oldest one left. Unreferenced: it never holds the process open by itself.
 */
class ExpiryList extends CallList {
  #timer: NodeJS.Timeout | undefined;
  readonly #ms: number;

  constructor(ms: number) {
    super();
    this.#ms = ms;
  }

  override add(pending: Pending): void {
    pending.at = performance.now() + this.#ms;
    super.add(pending);
    if (this.#timer === undefined) this.#arm(this.#ms);
  }

  #arm(ms: number): void {
    this.#timer = setTimeout(this.#fire, Math.min(Math.max(1, Math.ceil(ms)), MAX_TIMER_MS));
    this.#timer.unref();
  }

  readonly #fire = (): void => {
    this.#timer = undefined;
    const now = performance.now();
    for (let head = this.head; head !== undefined && head.at <= now; head = this.head) {
      this.remove(head);
      head.expire();
    }
    if (this.head) this.#arm(this.head.at - now);
  };
}

/** Where shutdown finds the HTTP calls this step holds (HttpStreams in shutdown-streams.ts). */
export interface ShutdownEnds {
  alsoEnd(end: (reason: GrpcError) => number): void;
}

/**
 * Unary calls that arrive without a deadline get `seconds` (0 = none). A deadline covers the whole
 * call, whatever its kind: when it passes, the handler's signal aborts and the caller gets
 * DEADLINE_EXCEEDED at once, on every transport, even if the handler ignores its signal: the call is
 * ended through its stream objects (the handler's pending read of a request fails, and the response
 * stream fails), not left to each transport.
 *
 * With `shutdown`, the HTTP calls answered with a single response (unary, client-streaming) that are still
 * running when the shutdown budget runs out end the same way, with UNAVAILABLE: each transport then answers in
 * its own form (503 with Retry-After, Connect's error, gRPC-Web trailers) before the sockets close. Shutdown
 * finds them in this step's lists: a call with the default deadline pays nothing more for it, an HTTP call with a
 * deadline of its own a list insert and removal, and only an HTTP call with no deadline at all is held for it
 * alone. (The HTTP streams are HttpStreams' own.)
 */
export function defaultTimeout(seconds: number, shutdown?: ShutdownEnds): Interceptor {
  // Shared by every method's calls that take the default: they all wait `seconds`.
  const defaults = seconds > 0 ? new ExpiryList(seconds * 1000) : undefined;
  /** The HTTP calls not in `defaults`: with a deadline of their own (each with its timer), or with none. */
  const others = new CallList();
  if (shutdown) {
    shutdown.alsoEnd((reason) => (defaults?.endHttpCalls(reason) ?? 0) + others.endHttpCalls(reason));
  }
  return (next, method) => {
    const defaultSeconds = method.kind === "unary" ? seconds : 0;
    const streams = method.kind === "server_streaming" || method.kind === "bidi_streaming";
    return (call) => {
      const { ctx } = call;
      let list: ExpiryList | undefined;
      if (ctx.deadline === Number.POSITIVE_INFINITY) {
        if (defaultSeconds > 0) {
          ctx.deadline = Date.now() + defaultSeconds * 1000;
          list = defaults;
        } else if (streams || ctx.transport !== "http" || !shutdown) return next(call);
        // Else an HTTP call with no deadline at all: no timer, held only for shutdown.
      }
      const remaining = ctx.deadline - Date.now();
      if (remaining <= 0) throw deadlineExceeded();
      const pending = new Pending(ctx, call.requests?.interruptible());
      if (list) list.add(pending);
      else {
        // A deadline further away than a timer holds (a 30-day one) is clamped, not expired at once.
        if (remaining !== Number.POSITIVE_INFINITY) pending.timer = setTimeout(expireByTimer, Math.min(remaining, MAX_TIMER_MS), pending);
        if (shutdown && ctx.transport === "http") others.add(pending);
      }
      next(call).then(
        (result) => pending.settle(result, streams),
        (err: unknown) => pending.fail(err),
      );
      return pending.promise;
    };
  };
}
