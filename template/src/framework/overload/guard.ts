import { monitorEventLoopDelay } from "node:perf_hooks";
import { rootLogger } from "../logging/logger.js";

/** Why a call was refused: the `reason` label of `grpc_server_shed_total`. */
export type ShedReason = "event_loop_delay" | "event_loop_utilization" | "in_flight";
export const SHED_REASONS: readonly ShedReason[] = ["event_loop_delay", "event_loop_utilization", "in_flight"];

export interface OverloadSettings {
  /** Mean event-loop delay (ms) over a sample above which new calls are refused; 0 = off. */
  maxEventLoopDelayMs: number;
  /** Event-loop utilisation (0–1) over a sample above which new calls are refused; 0 = off. */
  maxEventLoopUtilization: number;
  /** Calls in flight (gRPC and HTTP) beyond which new calls are refused; 0 = no limit. */
  maxInFlightCalls: number;
}

/**
 * How often the event loop is sampled. A timer, never per call: the per-call check reads the outcome. Short
 * enough that shedding starts within a tenth of a second of saturation and stops as soon after it, so that
 * under a steady overload the process alternates between serving and refusing in steps small enough to keep
 * it busy (measured in BENCHMARKS.md, "Overload"); long enough to cost nothing (ten timer runs a second).
 */
export const SAMPLE_INTERVAL_MS = 100;
/** monitorEventLoopDelay's timer (ms): @fastify/under-pressure's, subtracted from the mean as it does. */
const RESOLUTION_MS = 10;
/** At most one "refusing new calls" warning per this many ms; the counter has every refusal. */
const LOG_INTERVAL_MS = 10_000;
/** The `Retry-After` of a refused HTTP call, in seconds: an overload passes in samples of a tenth of one. */
export const RETRY_AFTER_SECONDS = 1;

/**
 * Overload protection for one service process, shared by its gRPC and HTTP ports (what @fastify/under-pressure
 * does for a fastify app, for every transport). A transport counts a call in flight from the moment it is
 * accepted (an HTTP/2 stream, an HTTP request, a WebSocket upgrade) until it closes, and refuses it at once,
 * before anything is decoded, when `++inFlight > limit`; only then does it ask `refuse()` (exempt paths are
 * served anyway). `limit` is MAX_IN_FLIGHT_CALLS (or Infinity), and 0 while the last sample of the event loop
 * found it saturated: the per-call cost is an increment, a comparison and a close listener.
 */
export class OverloadGuard {
  /** Calls accepted and not yet closed. */
  inFlight = 0;
  /** A call is admitted while `inFlight` (counting it) is at most this. */
  limit: number;
  /** Why calls are refused while `limit` is 0 (the loop's state); undefined while it is not. */
  saturated: ShedReason | undefined;
  /** The last sample: mean event-loop delay (ms) and utilisation (0–1). */
  eventLoopDelayMs = 0;
  eventLoopUtilization = 0;
  /** Ends a call's count: the transports' close listener (one function, no closure per call). */
  readonly release = (): void => {
    this.inFlight--;
  };
  readonly #settings: OverloadSettings;
  readonly #onShed: (reason: ShedReason) => void;
  readonly #maxInFlight: number;
  #histogram: ReturnType<typeof monitorEventLoopDelay> | undefined;
  #timer: NodeJS.Timeout | undefined;
  #elu: EventLoopUtilization | undefined;
  #shedSinceLog = 0;
  #lastLog = Number.NEGATIVE_INFINITY;

  constructor(settings: OverloadSettings, onShed: (reason: ShedReason) => void = () => {}) {
    this.#settings = settings;
    this.#onShed = onShed;
    this.#maxInFlight = settings.maxInFlightCalls > 0 ? settings.maxInFlightCalls : Number.POSITIVE_INFINITY;
    this.limit = this.#maxInFlight;
  }

  /** Whether any check is on. */
  get enabled(): boolean {
    return this.#sampling || this.#maxInFlight !== Number.POSITIVE_INFINITY;
  }

  get #sampling(): boolean {
    return this.#settings.maxEventLoopDelayMs > 0 || this.#settings.maxEventLoopUtilization > 0;
  }

  /** Starts sampling the event loop (when a loop check is on). Idempotent. */
  start(): void {
    if (this.#timer !== undefined || !this.#sampling) return;
    this.#histogram = monitorEventLoopDelay({ resolution: RESOLUTION_MS });
    this.#histogram.enable();
    this.#elu = performance.eventLoopUtilization();
    this.#timer = setInterval(() => this.sample(), SAMPLE_INTERVAL_MS).unref();
  }

  stop(): void {
    clearInterval(this.#timer);
    this.#timer = undefined;
    this.#histogram?.disable();
    this.#histogram = undefined;
    this.saturated = undefined;
    this.limit = this.#maxInFlight;
  }

  /** Takes a sample of the event loop since the last one and sets `limit` from it (the timer calls it). */
  sample(): void {
    const histogram = this.#histogram;
    if (histogram === undefined || this.#elu === undefined) return;
    // No sample in the interval means the loop was blocked for all of it (the histogram's own timer never ran).
    const mean = histogram.count === 0 ? Number.POSITIVE_INFINITY : histogram.mean / 1e6;
    this.eventLoopDelayMs = Math.max(0, mean - RESOLUTION_MS);
    histogram.reset();
    const now = performance.eventLoopUtilization();
    this.eventLoopUtilization = performance.eventLoopUtilization(now, this.#elu).utilization;
    this.#elu = now;
    const { maxEventLoopDelayMs, maxEventLoopUtilization } = this.#settings;
    this.saturated =
      maxEventLoopDelayMs > 0 && this.eventLoopDelayMs > maxEventLoopDelayMs
        ? "event_loop_delay"
        : maxEventLoopUtilization > 0 && this.eventLoopUtilization > maxEventLoopUtilization
          ? "event_loop_utilization"
          : undefined;
    this.limit = this.saturated === undefined ? this.#maxInFlight : 0;
  }

  /**
   * After `++inFlight > limit`: whether to refuse this call. An exempt call (health, readiness, metrics,
   * reflection, the gateway's own hop) is served and stays counted; a refused one is counted in
   * `grpc_server_shed_total`, logged now and then, and no longer in flight (the caller answers it at once).
   */
  refuse(exempt: boolean): boolean {
    if (exempt) return false;
    this.inFlight--;
    const reason = this.saturated ?? "in_flight";
    this.#onShed(reason);
    this.#shedSinceLog++;
    const now = performance.now();
    if (now - this.#lastLog >= LOG_INTERVAL_MS) {
      rootLogger().warn(
        {
          reason,
          shed: this.#shedSinceLog,
          inFlight: this.inFlight,
          eventLoopDelayMs: Math.round(this.eventLoopDelayMs),
          eventLoopUtilization: Math.round(this.eventLoopUtilization * 1000) / 1000,
        },
        "overloaded: refusing new calls",
      );
      this.#lastLog = now;
      this.#shedSinceLog = 0;
    }
    return true;
  }
}

type EventLoopUtilization = ReturnType<typeof performance.eventLoopUtilization>;
