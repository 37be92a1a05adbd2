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
 * enough to react within a tenth of a second, long enough to cost nothing (ten timer runs a second), and long
 * enough that one garbage-collection pause (tens of ms) moves the mean of its ~10 delay samples little.
 */
export const SAMPLE_INTERVAL_MS = 100;
/** monitorEventLoopDelay's timer (ms): @fastify/under-pressure's, subtracted from the mean as it does. */
const RESOLUTION_MS = 10;
/** At most one "refusing new calls" warning per this many ms; the counter has every refusal. */
const LOG_INTERVAL_MS = 10_000;
/** The `Retry-After` of a refused HTTP call, in seconds: an overload is re-assessed every tenth of one. */
export const RETRY_AFTER_SECONDS = 1;
/**
 * The loop must be saturated in this many samples in a row (3 s) before calls are refused: a burst passes, as
 * when a thousand clients connect at once (1-2.5 s on a quiet machine for the bench's 1,000 SSE or WebSocket
 * streams, measured; 300 ms refused up to half of them on a loaded one) or clients reconnect after a rollout;
 * a sustained overload is acted on within 3 s, and from then on within a sample.
 */
const SUSTAINED_SAMPLES = 30;
/** While saturated, calls are admitted at this fraction of the rate the process took them in at. */
const BACK_OFF = 0.9;
/** A sample that is not saturated while calls are still refused raises the admitted rate by this factor. */
const PROBE_UP = 1.2;
/** The admitted rate never falls below this fraction of the highest admission rate seen lately. */
const FLOOR = 0.1;
/** The highest admission rate seen decays by this factor per sample (half-life ~7 s). */
const PEAK_DECAY = 0.99;
/** The admission bucket holds this many ms of the admitted rate: a burst is let in, not a backlog. */
const BURST_MS = 5;

/**
 * Overload protection for one service process, shared by its gRPC and HTTP ports (what @fastify/under-pressure
 * does for a fastify app, for every transport). A transport counts a call in flight from the moment it is
 * accepted (an HTTP/2 stream, an HTTP request, a WebSocket upgrade) until it closes (`release`), and asks
 * `refuse()` only when `++inFlight > limit`: the per-call cost is an increment, a comparison and a close
 * listener. `limit` is MAX_IN_FLIGHT_CALLS (or Infinity), and 0 while the event loop is saturated, which sends
 * every call to `refuse()`.
 *
 * Saturated means the last sample's mean event-loop delay is above OVERLOAD_MAX_EVENT_LOOP_DELAY_MS and its
 * utilisation above OVERLOAD_MAX_EVENT_LOOP_UTILIZATION (either alone when the other is 0): a loop that is
 * late but mostly idle (a pause, a starved CPU at low load) is not refusing work; and only once that has
 * lasted SUSTAINED_SAMPLES. Then calls are not all refused (that would leave the process idle the next moment
 * and swing between all and nothing, with a backlog each time): they are admitted through a token bucket at a
 * little less than the rate the process took calls in at, lowered while the loop stays saturated and raised
 * while it does not, until every call fits again (an adaptive limit as go-zero's shedder and Netflix's
 * concurrency limits keep, on Node's own signal). Admissions, not completions, set the rate: a call that is
 * a long stream completes late or never.
 */
export class OverloadGuard {
  /** Calls accepted and not yet closed. */
  inFlight = 0;
  /** A call is admitted at once while `inFlight` (counting it) is at most this; above it, `refuse()` decides. */
  limit: number;
  /** Why calls are being refused while the loop is saturated; undefined while it is not. */
  saturated: ShedReason | undefined;
  /** The last sample: mean event-loop delay (ms) and utilisation (0–1). */
  eventLoopDelayMs = 0;
  eventLoopUtilization = 0;
  /** Calls admitted per ms while saturated. */
  admittedRate = 0;
  /** Ends a call's count: the transports' close listener (one function, no closure per call). */
  readonly release = (): void => {
    this.inFlight--;
    this.#completed++;
  };
  readonly #settings: OverloadSettings;
  readonly #onShed: (reason: ShedReason) => void;
  readonly #maxInFlight: number;
  #histogram: ReturnType<typeof monitorEventLoopDelay> | undefined;
  #timer: NodeJS.Timeout | undefined;
  #elu: EventLoopUtilization | undefined;
  #lastSample = 0;
  #completed = 0;
  #completedAtSample = 0;
  #inFlightAtSample = 0;
  /** Saturated samples in a row. */
  #overSamples = 0;
  /** The highest admission rate (calls/ms) seen lately. */
  #peakRate = 0;
  /** Calls that reached `refuse()` while saturated since the last sample, and the bucket's state. */
  #arrivals = 0;
  #tokens = 0;
  #refilled = 0;
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
    return this.sampling || this.#maxInFlight !== Number.POSITIVE_INFINITY;
  }

  /** Whether an event-loop check is on (the loop is sampled). */
  get sampling(): boolean {
    return this.#settings.maxEventLoopDelayMs > 0 || this.#settings.maxEventLoopUtilization > 0;
  }

  /** Starts sampling the event loop (when a loop check is on). Idempotent. */
  start(): void {
    if (this.#timer !== undefined || !this.sampling) return;
    this.#histogram = monitorEventLoopDelay({ resolution: RESOLUTION_MS });
    this.#histogram.enable();
    this.#elu = performance.eventLoopUtilization();
    this.#lastSample = performance.now();
    this.#completedAtSample = this.#completed;
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

  /** Takes a sample of the event loop since the last one and adjusts the admission (the timer calls it). */
  sample(): void {
    const histogram = this.#histogram;
    if (histogram === undefined || this.#elu === undefined) return;
    const now = performance.now();
    const elapsed = Math.max(1, now - this.#lastSample);
    this.#lastSample = now;
    // No delay recorded: the loop was blocked for the whole interval (the histogram's own timer never ran).
    const delay = histogram.count === 0 ? elapsed : histogram.mean / 1e6;
    this.eventLoopDelayMs = Math.max(0, delay - RESOLUTION_MS);
    histogram.reset();
    const elu = performance.eventLoopUtilization();
    this.eventLoopUtilization = performance.eventLoopUtilization(elu, this.#elu).utilization;
    this.#elu = elu;
    // Calls admitted since the last sample: those still in flight and those that ended (refused ones are neither).
    const takenRate = (this.inFlight - this.#inFlightAtSample + this.#completed - this.#completedAtSample) / elapsed;
    this.#inFlightAtSample = this.inFlight;
    this.#completedAtSample = this.#completed;
    this.#peakRate = Math.max(this.#peakRate * PEAK_DECAY, takenRate);
    const arrivalRate = this.#arrivals / elapsed;
    this.#arrivals = 0;

    const over = this.#over();
    this.#overSamples = over === undefined ? 0 : this.#overSamples + 1;
    if (over !== undefined && (this.saturated !== undefined || this.#overSamples >= SUSTAINED_SAMPLES)) {
      // Saturated: admit a little less than was taken in (never less than the floor).
      const target = Math.max(FLOOR * this.#peakRate, BACK_OFF * takenRate);
      if (this.saturated === undefined) {
        this.admittedRate = target;
        this.#tokens = 0;
        this.#refilled = now;
      } else this.admittedRate = Math.min(this.admittedRate, target);
      this.saturated = over;
      this.limit = 0;
    } else if (this.saturated !== undefined) {
      if (arrivalRate <= this.admittedRate) {
        // Every call fits again.
        this.saturated = undefined;
        this.limit = this.#maxInFlight;
      } else this.admittedRate *= PROBE_UP;
    }
  }

  /** The reason the last sample counts as saturated, or undefined. */
  #over(): ShedReason | undefined {
    const { maxEventLoopDelayMs, maxEventLoopUtilization } = this.#settings;
    const late = maxEventLoopDelayMs <= 0 || this.eventLoopDelayMs > maxEventLoopDelayMs;
    const busy = maxEventLoopUtilization <= 0 || this.eventLoopUtilization > maxEventLoopUtilization;
    if (!late || !busy) return undefined;
    return maxEventLoopDelayMs > 0 ? "event_loop_delay" : "event_loop_utilization";
  }

  /**
   * After `++inFlight > limit`: whether to refuse this call. An exempt call (health, readiness, metrics,
   * reflection) is served and stays counted. Beyond MAX_IN_FLIGHT_CALLS a call is refused; while the loop is
   * saturated it is admitted if the bucket has a token. A refused call is counted in `grpc_server_shed_total`,
   * logged now and then, and no longer in flight (the caller answers it at once).
   */
  refuse(exempt: boolean): boolean {
    if (exempt) return false;
    if (this.inFlight > this.#maxInFlight) return this.#shed("in_flight");
    const reason = this.saturated;
    if (reason === undefined) return false;
    this.#arrivals++;
    const now = performance.now();
    const burst = Math.max(1, this.admittedRate * BURST_MS);
    this.#tokens = Math.min(burst, this.#tokens + (now - this.#refilled) * this.admittedRate);
    this.#refilled = now;
    if (this.#tokens >= 1) {
      this.#tokens -= 1;
      return false;
    }
    return this.#shed(reason);
  }

  #shed(reason: ShedReason): true {
    this.inFlight--;
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
          admittedPerSecond: reason === "in_flight" ? undefined : Math.round(this.admittedRate * 1000),
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
