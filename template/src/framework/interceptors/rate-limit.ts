import { Metadata } from "@grpc/grpc-js";
import { SKIP, type Stage, staged } from "../call/chain.js";
import { Code, GrpcError } from "../call/status.js";
import type { Call, Interceptor } from "../call/types.js";

/** A token bucket refilled continuously at `rate` tokens/s up to `burst`. */
export class TokenBucket {
  readonly #rate: number;
  readonly #burst: number;
  #tokens: number;
  #last: number;

  constructor(rate: number, burst: number, now = performance.now()) {
    this.#rate = rate;
    this.#burst = burst;
    this.#tokens = burst;
    this.#last = now;
  }

  /** Takes a token: 0 when granted, else the seconds until one is available. */
  take(now = performance.now()): number {
    this.#tokens = Math.min(this.#burst, this.#tokens + ((now - this.#last) / 1000) * this.#rate);
    this.#last = now;
    if (this.#tokens >= 1) {
      this.#tokens -= 1;
      return 0;
    }
    return (1 - this.#tokens) / this.#rate;
  }
}

/**
 * One bucket for the whole process (`rate` 0 = off). A rejection is RESOURCE_EXHAUSTED
 * with a `retry-after` (seconds) trailer, which the gateway turns into HTTP 429 + Retry-After.
 */
export function rateLimit(rate: number, burst: number | undefined, onReject: (method: string) => void = () => {}): Interceptor {
  if (rate <= 0)
    return staged(
      () => SKIP,
      (next) => next,
    );
  const bucket = new TokenBucket(rate, burst ?? Math.max(1, Math.floor(rate)));
  const take = (call: Call): void => {
    const wait = bucket.take();
    if (wait === 0) return;
    onReject(call.method.path);
    const metadata = new Metadata();
    metadata.set("retry-after", String(Math.max(1, Math.ceil(wait))));
    throw new GrpcError(Code.RESOURCE_EXHAUSTED, "rate limit exceeded", { metadata });
  };
  // The same check for every kind of call, before the rest of the chain.
  const stage: Stage = { enter: take };
  return staged(
    () => stage,
    (next) => (call) => {
      take(call);
      return next(call);
    },
  );
}
