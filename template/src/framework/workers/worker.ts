import { setTimeout as sleep } from "node:timers/promises";
import type { Logger } from "pino";

/**
 * A background function of the service, supervised by the framework: started once the servers
 * listen (before `postStart`), restarted with capped exponential back-off when it throws, and
 * stopped on shutdown after the drain wait (its signal aborts, and shutdown awaits it).
 *
 * ```ts
 * workers: [
 *   { name: "queue-consumer", async run(signal, log) { while (!signal.aborted) await consume(signal) } },
 *   { name: "cache-refresh", run: every(60_000, (signal) => refresh(signal), { jitter: 0.2 }) },
 * ]
 * ```
 */
export interface Worker {
  /** Names the worker in its log lines (`worker`) and in the `worker` label of its metrics. Unique per process. */
  readonly name: string;
  /**
   * Runs until `signal` aborts, then returns promptly (pass the signal on to timers, fetches, queries).
   * A throw or rejection before the abort counts as a failure and restarts it after a back-off;
   * returning before the abort ends the worker for good (a one-off task).
   */
  run(signal: AbortSignal, log: Logger): Promise<void> | void;
  /** The restart back-off; defaults to 1 s doubling up to 60 s. */
  readonly backoff?: BackoffOptions;
}

export interface BackoffOptions {
  /** Delay before the first restart, in ms (default 1000). */
  readonly initialMs?: number;
  /** Largest delay, in ms (default 60000). A run that lasted at least this long resets the back-off. */
  readonly maxMs?: number;
  /** Growth per consecutive failure (default 2). */
  readonly factor?: number;
}

export const DEFAULT_BACKOFF: Required<BackoffOptions> = { initialMs: 1000, maxMs: 60_000, factor: 2 };

/** The delay before restart number `failures + 1`: initial × factor^failures, capped at max. */
export function backoffDelay(failures: number, options: BackoffOptions = {}): number {
  const { initialMs, maxMs, factor } = { ...DEFAULT_BACKOFF, ...options };
  return Math.min(maxMs, initialMs * factor ** failures);
}

export interface EveryOptions {
  /**
   * Spread of each wait as a fraction of the period, from 0 to 1 (default 0.1): a wait is drawn
   * uniformly from `ms × (1 − jitter)` to `ms × (1 + jitter)`, so replicas do not act in step.
   */
  readonly jitter?: number;
  /** Runs `fn` right away instead of after the first wait (default false). */
  readonly immediate?: boolean;
  /** Source of randomness in [0, 1) (default Math.random); tests pass a fixed one. */
  readonly random?: () => number;
  /** How a wait is done (default a timer); rejects when `signal` aborts. Tests pass one that records the waits. */
  readonly wait?: (ms: number, signal: AbortSignal) => Promise<unknown>;
}

const timerWait = (ms: number, signal: AbortSignal) => sleep(ms, undefined, { signal });

/** One wait of a periodic worker: `ms` spread by ± `jitter` × `ms`, for `u` in [0, 1). */
export function jittered(ms: number, jitter: number, u: number): number {
  return ms * (1 + jitter * (2 * u - 1));
}

/**
 * A periodic worker's `run`: calls `fn` every `ms` (± jitter) until the signal aborts. The wait
 * starts when `fn` has finished, so calls never overlap. A throw from `fn` ends the loop and the
 * supervisor restarts it after its back-off (the loop then starts again with a wait, unless `immediate`).
 */
export function every(
  ms: number,
  fn: (signal: AbortSignal, log: Logger) => Promise<void> | void,
  options: EveryOptions = {},
): Worker["run"] {
  const { jitter = 0.1, immediate = false, random = Math.random, wait = timerWait } = options;
  if (!(Number.isFinite(ms) && ms > 0)) throw new RangeError(`every: the period must be a positive number of ms (got ${ms})`);
  if (!(jitter >= 0 && jitter <= 1)) throw new RangeError(`every: jitter must be from 0 to 1 (got ${jitter})`);
  return async (signal, log) => {
    let first = true;
    while (!signal.aborted) {
      if (!(first && immediate)) {
        try {
          await wait(jittered(ms, jitter, random()), signal);
        } catch {
          return; // aborted while waiting: a normal stop
        }
      }
      first = false;
      await fn(signal, log);
    }
  };
}
