import { Code } from "../call/status.js";

export interface BreakerOptions {
  /** How much the throttle trusts the dependency: it lets calls through while calls < k × accepted ones. Default 2 (the SRE book's). */
  k?: number;
  /** The window the counts cover, in ms (default 10 000), kept in 10 buckets. */
  windowMs?: number;
  /** Below this many calls in the window nothing is rejected (default 10): one failure of a quiet client is not a dead dependency. */
  minRequests?: number;
}

/**
 * Codes that say the dependency, not the request, failed. Everything else is an accept: an answer such as
 * InvalidArgument, NotFound, AlreadyExists, PermissionDenied, Unauthenticated, FailedPrecondition or OutOfRange
 * proves the dependency is up and working. (go-zero's and kratos' breakers draw the same line.)
 */
const FAILURES = new Set<number>([
  Code.UNKNOWN,
  Code.DEADLINE_EXCEEDED,
  Code.RESOURCE_EXHAUSTED,
  Code.UNIMPLEMENTED,
  Code.INTERNAL,
  Code.UNAVAILABLE,
  Code.DATA_LOSS,
]);

/** True when the code is the dependency's failure (not an answer about the request). */
export function isDependencyFailure(code: number): boolean {
  return FAILURES.has(code);
}

const BUCKETS = 10;

/**
 * Client-side adaptive throttling (Google SRE book, "Handling Overload"): each call is rejected locally with
 * probability max(0, (requests − k·accepts) / (requests + 1)) over a sliding window. grpc-js has a retry budget
 * (retry throttling) but nothing that stops *first* attempts to a dependency that fails them all, so this is
 * hand-written; it is a few additions and one Math.random() per call.
 *
 * `requests` counts the calls sent to the dependency, not the ones rejected here (as go-zero's breaker): counting
 * rejections too (the book's literal reading) makes a fast caller's window fill with its own rejections, and a
 * recovered dependency then waits about window/2 × ln(calls in the window) before the throttle lets calls
 * through again (over a minute at 10 000 calls in 10 s). Counting only calls sent, a dead dependency still gets
 * about √(rate × window) probes per window, and a recovered one is trusted again within about a second.
 */
export class AdaptiveThrottle {
  readonly #k: number;
  readonly #bucketMs: number;
  readonly #minRequests: number;
  readonly #requests = new Float64Array(BUCKETS);
  readonly #accepts = new Float64Array(BUCKETS);
  /** Index of the bucket `#bucketStart` begins. */
  #bucket = 0;
  #bucketStart = 0;
  #requestSum = 0;
  #acceptSum = 0;

  constructor(options: BreakerOptions = {}) {
    this.#k = options.k ?? 2;
    this.#bucketMs = (options.windowMs ?? 10_000) / BUCKETS;
    this.#minRequests = options.minRequests ?? 10;
    if (!(this.#k >= 1) || !(this.#bucketMs > 0) || !(this.#minRequests >= 0)) {
      throw new Error(`breaker: k must be ≥ 1, windowMs > 0 and minRequests ≥ 0 (got ${JSON.stringify(options)})`);
    }
  }

  /** The probability with which the next call is rejected, 0 while the dependency answers. */
  rejectProbability(now = performance.now()): number {
    this.#advance(now);
    const requests = this.#requestSum;
    if (requests < this.#minRequests) return 0;
    const p = (requests - this.#k * this.#acceptSum) / (requests + 1);
    return Math.max(p, 0);
  }

  /** Whether to reject a call now. A call let through must report its outcome with `record`. */
  reject(): boolean {
    const p = this.rejectProbability();
    return p > 0 && Math.random() < p;
  }

  /** The outcome of a call that was let through (its final status code). */
  record(code: number, now = performance.now()): void {
    this.#advance(now);
    this.#requests[this.#bucket]!++;
    this.#requestSum++;
    if (!FAILURES.has(code)) {
      this.#accepts[this.#bucket]!++;
      this.#acceptSum++;
    }
  }

  /** Moves the window to `now`, emptying the buckets it left behind. */
  #advance(now: number): void {
    const elapsed = now - this.#bucketStart;
    if (elapsed < this.#bucketMs) return;
    const steps = Math.floor(elapsed / this.#bucketMs);
    for (let i = 0; i < Math.min(steps, BUCKETS); i++) {
      this.#bucket = (this.#bucket + 1) % BUCKETS;
      this.#requestSum -= this.#requests[this.#bucket]!;
      this.#acceptSum -= this.#accepts[this.#bucket]!;
      this.#requests[this.#bucket] = 0;
      this.#accepts[this.#bucket] = 0;
    }
    this.#bucketStart += steps * this.#bucketMs;
  }
}
