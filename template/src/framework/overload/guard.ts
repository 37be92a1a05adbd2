import { monitorEventLoopDelay } from "node:perf_hooks";
import { rootLogger } from "../logging/logger.js";

/** Why a call was refused: the `reason` label of `grpc_server_shed_total`. */
export type ShedReason = "event_loop_delay" | "event_loop_utilization" | "in_flight" | "partial_messages";
export const SHED_REASONS: readonly ShedReason[] = ["event_loop_delay", "event_loop_utilization", "in_flight", "partial_messages"];

/**
 * What a transport tells `refuse()` about a call over the limit: `call` (a unary call or any new request, governed
 * by every check), `exempt` (probes, metrics, reflection: never refused) or `stream` (a long-lived stream: SSE,
 * WebSocket, a gRPC streaming method: refused beyond MAX_IN_FLIGHT_CALLS only, see OverloadGuard).
 */
export type CallKind = "call" | "exempt" | "stream";

export interface OverloadSettings {
  /** Mean event-loop delay (ms) over a sample above which the sample counts as overloaded; 0 = off. */
  maxEventLoopDelayMs: number;
  /** Event-loop utilisation (0–1) over a sample above which the sample counts as overloaded; 0 = off. */
  maxEventLoopUtilization: number;
  /** Calls in flight (gRPC and HTTP) beyond which new calls are refused; 0 = no limit. */
  maxInFlightCalls: number;
}

/** One sample of the event loop: what `sample()` measures, or a test gives it. */
export interface LoopSample {
  /** Mean delay of the loop's timers over the sample, ms. */
  delayMs: number;
  /** Fraction of the sample the loop was busy, 0–1. */
  utilization: number;
  /** Length of the sample, ms. */
  elapsedMs: number;
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
 * How long (ms) the share of time over both bars is averaged over: each sample weighs by its length (1 − e^(−t/τ)),
 * so a loop whose turns themselves last seconds (a backlog read in one go) is judged on time, not on a count of
 * samples it rarely gets to take.
 */
const OVER_TAU_MS = 300;
/**
 * The process is overloaded once that share reaches this: 3 samples of 100 ms in a row, or a sliding majority
 * over longer (utilisation wandering around its bar under a real overload, which broke any run of samples in a
 * row: the rule of 30 in a row never engaged at 2× capacity); one or two late samples (a pause) are not. Soon,
 * since every 100 ms of an overload left alone adds 100 ms of backlog that the calls admitted next wait out.
 */
const ENGAGE_SHARE = 0.6;
/**
 * Ungoverned, calls in flight beyond those at the last sample plus as many as the process completes in half of
 * SURGE_BARS delay bars at its best take the slow path (refuse()), which governs at once if the loop has not got
 * round to its timers for SURGE_BARS bars (80 ms by default): one turn reading a backlog (a read of sixteen
 * connections after a burst brings hundreds of calls, each admitted before any is served) is cut short instead
 * of running on. Counted in time, not calls: 256 bare Echo calls are 15 ms of work, 256 calls of 500 µs are
 * 128 ms. Four bars, so that a burst the loop clears in a turn or two is served whole (two refused 6,867 of
 * 39,000 bare Echo calls at a third of capacity, the load generator's own pauses sending ~700 at once); between SURGE_MIN and
 * SURGE_MAX calls (SURGE_MAX until a rate is known), above the closed loops of a benchmark (h2load's 128 calls
 * outstanding) for calls of tens of µs. With only the utilisation check on, the sampling timer's lateness
 * (a sample interval and a turn's budget) stands for the turn's.
 */
const SURGE_BARS = 4;
const SURGE_MIN = 16;
const SURGE_MAX = 256;
/** While overloaded, how often (ms) the loop notes that it got round to its timers: the per-call lateness clock. */
const TICK_MS = 2;
/**
 * While not overloaded (and the delay check is on), how often (ms) the loop's turns are watched once a sample
 * saw them long: how late this timer runs is how long the turn before it lasted. Only then: a timer this
 * frequent, even an empty one, costs a busy loop ~10 % per stream message (fewer events per turn of the loop),
 * so it runs from a sample whose mean delay reaches LONG_TURN_SHARE of the bar until the next sample under it or
 * DISARM_WATCHES short turns in a row. (Until the short turns alone, a closed loop at capacity whose turns now
 * and then run long kept it for good once start-up had armed it: 8-12 % more CPU a unary call at h2load -c4 -m32.)
 */
const WATCH_MS = 5;
const DISARM_WATCHES = 40;
/** A watched turn counts as long when its timer ran at least this share of OVERLOAD_MAX_EVENT_LOOP_DELAY_MS late. */
const LONG_TURN_SHARE = 0.5;
/**
 * An overload beginning, told apart from a pause: this many long turns in a row, each at least GROWTH times as
 * late as the one before and reading at least CALL_GROWTH times as many calls, the loop busy in each, the last
 * late by the whole bar. Offered more than it serves,
 * each turn of the loop reads what came during the last one and lasts longer (twice as long at 2× capacity:
 * 16, 32, 64 ms); after a pause (a collection, a burst) the turns shrink as fast as the load is below capacity
 * (to a third at a third of it); a closed loop at capacity keeps them as they are; and a starved CPU makes
 * timers late while the loop sits idle. The calls each turn reads grow with them (what came during the turn
 * before), where a closed loop's turns, lengthened by a collection or a stolen CPU, read no more than its clients
 * have outstanding (without this, such turns governed a closed loop at capacity now and then, refusing 2-5 % of
 * its calls). Acted on within ~0.1 s where the samples' share takes 0.3 s, and every 100 ms of an overload
 * left alone is 100 ms more that the calls admitted next wait out. An overload that grows more slowly than
 * GROWTH is left to the samples.
 */
const GROWING_TURNS = 3;
const GROWTH = 1.5;
/** Below GROWTH: the calls a turn reads follow the turn before's length, and arrive unevenly. */
const CALL_GROWTH = 1.25;
/**
 * While overloaded, a call is refused when the current turn of the loop has run this long (ms) since its timers
 * last ran (plus up to TICK_MS), less how late they ran: half of OVERLOAD_MAX_EVENT_LOOP_DELAY_MS, or this when
 * only utilisation is checked.
 */
const TURN_FRACTION = 0.5;
const DEFAULT_TURN_MS = 10;
/**
 * However late the loop got round to its timers, each turn admits calls for at least this long (ms): a loop held
 * up by a starved CPU rather than by calls would otherwise refuse every call while it catches up.
 */
const MIN_BUDGET_MS = 2;
/** The best completion rate seen (calls per busy ms) decays by this factor per sample (half-life ~7 s). */
const PEAK_DECAY = 0.99;
/** A sample is calm enough to stop governing when at most this share of the calls that came were refused. */
const RELEASE_SHARE = 0.02;

/**
 * Overload protection for one service process, shared by its gRPC and HTTP ports (what @fastify/under-pressure
 * does for a fastify app, for every transport). A transport counts a call in flight from the moment it is
 * accepted (an HTTP/2 stream, an HTTP request, a WebSocket upgrade) until it closes (`release`), and asks
 * `refuse()` only when `++inFlight > limit`: the per-call cost is an increment, a comparison and a close
 * listener. `limit` is MAX_IN_FLIGHT_CALLS (or Infinity), and 0 while the process is overloaded, which sends
 * every call to `refuse()`.
 *
 * Overloaded means: for most of the last ~0.3 s (OVER_TAU_MS, ENGAGE_SHARE) the loop's mean timer delay
 * was above OVERLOAD_MAX_EVENT_LOOP_DELAY_MS while its utilisation was above OVERLOAD_MAX_EVENT_LOOP_UTILIZATION
 * (either alone when the other is 0). Both, because a loop that is late but mostly idle (a starved CPU at low
 * load) is not refusing work, and a loop busy all the time with short turns (a closed loop at capacity: calls
 * answered as fast as they come) has no queue. A climbing delay is the sign of one: calls arrive faster than
 * they are served and wait in the socket buffers in front of the loop, where no count of calls in flight sees
 * them, and each turn of the loop reads more of them than the last. So, sooner, three busy turns in a row that
 * each grow, in length and in calls read (GROWING_TURNS, watched by a 5 ms timer between samples), are an
 * overload too.
 *
 * Then a call is refused when it reaches the process late: once the loop's current turn has run half of
 * OVERLOAD_MAX_EVENT_LOOP_DELAY_MS (less however late the loop got round to its timers before it: what it reads
 * then waited that long already), or has admitted as many calls as the process completes in that time at its
 * best (one socket read brings hundreds, admitted before any is served), the rest of what it reads is refused,
 * cheaply (a fifth of an Echo), and the next turn starts afresh. Each turn does a bounded amount of work, so what is admitted is served at
 * once, a backlog in the socket buffers is drained by refusing it, and the process serves about as much as
 * it can beside refusing the rest. This decides within the turn, where a sample every 100 ms cannot: under
 * overload one turn reads thousands of calls. It needs no admitted rate to steer: such a rate, lowered while
 * the loop was busy, sank to its floor, since refusing keeps the loop busy too. Once a sample passes with
 * next to nothing refused and the loop under its bars, calls are no longer governed. Between watches, a surge
 * of calls in flight while the loop's timers are two delay bars overdue governs at once: one turn reading a backlog
 * would otherwise run for seconds before the turn is seen.
 *
 * Long-lived streams (SSE, WebSocket, gRPC streaming methods) count in flight but are refused only beyond
 * MAX_IN_FLIGHT_CALLS: a thousand clients subscribing at once keep the loop busy for a second or two, a burst
 * that passes, and each stream is one arrival, not a rate.
 */
export class OverloadGuard {
  /** Calls accepted and not yet closed. */
  inFlight = 0;
  /** A call is admitted at once while `inFlight` (counting it) is at most this; above it, `refuse()` decides. */
  limit: number;
  /** Why calls are being governed while the process is overloaded; undefined while it is not. */
  saturated: ShedReason | undefined;
  /** The last sample: mean event-loop delay (ms) and utilisation (0–1). */
  eventLoopDelayMs = 0;
  eventLoopUtilization = 0;
  /** Ends a call's count: the transports' close listener (one function, no closure per call). */
  readonly release = (): void => {
    this.inFlight--;
    this.#completed++;
  };
  readonly #settings: OverloadSettings;
  readonly #onShed: (reason: ShedReason) => void;
  readonly #maxInFlight: number;
  /** While overloaded, calls are admitted for this long (ms) after the ticking timer ran on time. */
  readonly #budgetMs: number;
  #histogram: ReturnType<typeof monitorEventLoopDelay> | undefined;
  #timer: NodeJS.Timeout | undefined;
  #elu: EventLoopUtilization | undefined;
  #lastSample = 0;
  /** The time-weighted share of the recent past spent over both bars (0–1). */
  #overShare = 0;
  /** The watching timer (WATCH_MS) or, while overloaded, the ticking one (TICK_MS); when it last ran; until when calls are admitted. */
  #ticker: NodeJS.Timeout | undefined;
  #tick = 0;
  #admitUntil = 0;
  /**
   * The loop got round to its timers (the ticking timer's callback; a test calls it): calls read from now on
   * are admitted for the turn's budget, less how late this tick ran (what the calls read now waited already).
   */
  readonly tick = (): void => {
    const now = this.#now();
    const late = Math.max(0, now - this.#tick - TICK_MS);
    this.#tick = now;
    this.#admitUntil = now + Math.max(MIN_BUDGET_MS, this.#budgetMs - late);
    // Calls are admitted when they reach the process, and served after the socket read that brought them: a
    // read can bring hundreds at once, before any is served. So a turn also admits at most what the process
    // completes in its budget at its best (calls in flight now, streams and calls awaiting I/O, stay).
    this.#turnLimit = this.inFlight + Math.max(1, Math.round(this.#peakRate * this.#budgetMs));
  };
  /**
   * The loop got round to its timers while not overloaded (the watching timer's callback, every WATCH_MS; a test
   * calls it with the loop's utilisation since the last call): governs at once when the turns grow as they do
   * under an overload (GROWING_TURNS).
   */
  readonly watch = (utilization?: number): void => {
    const now = this.#now();
    const late = now - this.#tick - WATCH_MS;
    this.#tick = now;
    const busy = utilization ?? this.#watchedUtilization();
    const arrived = this.inFlight + this.#completed + this.#shedTotal;
    const calls = arrived - this.#arrivedAtWatch;
    this.#arrivedAtWatch = arrived;
    const { maxEventLoopDelayMs: bar, maxEventLoopUtilization: maxBusy } = this.#settings;
    if (late < bar * LONG_TURN_SHARE || (maxBusy > 0 && busy <= maxBusy)) {
      this.#growing = 0;
      if (++this.#shortTurns >= DISARM_WATCHES) this.#disarm();
    } else {
      this.#shortTurns = 0;
      this.#growing = late >= GROWTH * this.#lastLate && calls >= CALL_GROWTH * this.#lastCalls ? this.#growing + 1 : 1;
      if (this.#growing >= GROWING_TURNS && late >= bar) this.#govern("event_loop_delay");
    }
    this.#lastLate = late;
    this.#lastCalls = calls;
  };
  readonly #now: () => number;
  /** Whether the loop's turns are watched between samples (the delay check is on). */
  readonly #watching: boolean;
  /** How long (ms) a turn runs on before a surge of calls in it governs: SURGE_BARS delay bars. */
  readonly #surgeMs: number;
  /**
   * Watched turns: how late the watching timer last ran (ms) and the calls that came in the turn before it, the
   * calls come (admitted or refused) by that watch, long turns in a row growing, the loop's busy time at the last watch.
   */
  #lastLate = 0;
  #lastCalls = 0;
  #arrivedAtWatch = 0;
  #growing = 0;
  #shortTurns = 0;
  /** Whether the loop's turns are being watched (from a sample that saw them long). */
  #armed = false;
  #watchedElu: EventLoopUtilization | undefined;
  /** Calls refused for lateness since the last sample. */
  #refused = 0;
  /** When the last sample was taken (the loop was at its timers then). */
  #sampledAt = 0;
  /** Calls admitted while governed since the last sample. */
  #admitted = 0;
  /** Calls completed (ended after being admitted), that count at the last sample, and the best rate lately (calls/ms). */
  #completed = 0;
  #completedAtSample = 0;
  #peakRate = 0;
  /** While overloaded: calls in flight beyond which this turn refuses. */
  #turnLimit = 0;
  #shedSinceLog = 0;
  /** Calls refused, ever: with those in flight and completed, every call that came. */
  #shedTotal = 0;
  #lastLog = Number.NEGATIVE_INFINITY;

  /** `now`: the clock (ms), performance.now but in tests. */
  constructor(settings: OverloadSettings, onShed: (reason: ShedReason) => void = () => {}, now: () => number = () => performance.now()) {
    this.#settings = settings;
    this.#now = now;
    this.#onShed = onShed;
    this.#maxInFlight = settings.maxInFlightCalls > 0 ? settings.maxInFlightCalls : Number.POSITIVE_INFINITY;
    this.#watching = settings.maxEventLoopDelayMs > 0;
    this.#surgeMs = (settings.maxEventLoopDelayMs > 0 ? settings.maxEventLoopDelayMs : 2 * DEFAULT_TURN_MS) * SURGE_BARS;
    this.#tick = now();
    const turnMs = settings.maxEventLoopDelayMs > 0 ? settings.maxEventLoopDelayMs * TURN_FRACTION : DEFAULT_TURN_MS;
    this.#budgetMs = TICK_MS + turnMs;
    this.limit = this.#maxInFlight;
  }

  /** Whether any check is on. */
  get enabled(): boolean {
    return this.sampling || this.#maxInFlight !== Number.POSITIVE_INFINITY;
  }

  /** Whether the loop's turns are watched now (a timer every WATCH_MS, from a sample that saw them long). */
  get watchingTurns(): boolean {
    return this.#armed;
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
    this.#sampledAt = this.#now();
    this.#timer = setInterval(() => this.sample(), SAMPLE_INTERVAL_MS).unref();
  }

  stop(): void {
    clearInterval(this.#timer);
    this.#timer = undefined;
    this.#histogram?.disable();
    this.#histogram = undefined;
    this.#overShare = 0;
    this.#release();
  }

  /**
   * Takes a sample of the event loop since the last one (the timer calls it; a test may pass the sample) and
   * decides whether calls are governed.
   */
  sample(measured?: LoopSample): void {
    const m = measured ?? this.#measure();
    if (m === undefined) return;
    this.eventLoopDelayMs = m.delayMs;
    this.eventLoopUtilization = m.utilization;
    // Calls completed per ms the loop was busy: what it completes at full load, measured from half load up (an
    // idle loop's few cheap calls, probes and timers say little about a burst's: under half, it counts as half).
    const completedRate = (this.#completed - this.#completedAtSample) / (Math.max(1, m.elapsedMs) * Math.max(0.5, m.utilization));
    this.#completedAtSample = this.#completed;
    // Not forgotten while governed: what a governed turn admits is capped by it, so its completions cannot show
    // the capacity, and a rate decaying through them (or through a CPU shared for a while) sank with them.
    this.#peakRate = Math.max(this.saturated === undefined ? this.#peakRate * PEAK_DECAY : this.#peakRate, completedRate);
    const refused = this.#refused;
    const admitted = this.#admitted;
    this.#refused = 0;
    this.#admitted = 0;
    const over = this.#over();
    const weight = 1 - Math.exp(-Math.max(0, m.elapsedMs) / OVER_TAU_MS);
    this.#overShare += ((over === undefined ? 0 : 1) - this.#overShare) * weight;
    this.#sampledAt = this.#now();
    if (this.saturated === undefined) {
      const { maxEventLoopDelayMs: bar, maxEventLoopUtilization: maxBusy } = this.#settings;
      const longTurns = m.delayMs >= bar * LONG_TURN_SHARE && (maxBusy <= 0 || m.utilization > maxBusy);
      if (this.#watching && longTurns !== this.#armed) {
        if (longTurns) this.#arm();
        else this.#disarm();
      }
      if (over === undefined || this.#overShare < ENGAGE_SHARE) {
        // Ungoverned: a surge of calls in flight beyond those held now (streams, calls awaiting I/O) makes the
        // calls over it ask refuse(), which looks at the clock: a turn that reads thousands of calls is a flood.
        this.limit = Math.min(this.#maxInFlight, this.inFlight + this.#surge());
        return;
      }
      this.#govern(over);
    } else if (over === undefined && refused <= RELEASE_SHARE * (refused + admitted)) {
      // The loop keeps up and next to no turn ran long: every call fits again. The share is kept: if the loop
      // falls behind again at once, the next sample over the bars governs again.
      this.#release();
    }
  }

  #measure(): LoopSample | undefined {
    const histogram = this.#histogram;
    if (histogram === undefined || this.#elu === undefined) return undefined;
    const now = performance.now();
    const elapsedMs = Math.max(1, now - this.#lastSample);
    this.#lastSample = now;
    // No delay recorded: the loop was blocked for the whole interval (the histogram's own timer never ran).
    const delay = histogram.count === 0 ? elapsedMs : histogram.mean / 1e6;
    histogram.reset();
    const elu = performance.eventLoopUtilization();
    const utilization = performance.eventLoopUtilization(elu, this.#elu).utilization;
    this.#elu = elu;
    return { delayMs: Math.max(0, delay - RESOLUTION_MS), utilization, elapsedMs };
  }

  #govern(reason: ShedReason): void {
    this.saturated = reason;
    this.limit = 0;
    this.#tick = this.#now() - TICK_MS;
    this.tick();
    this.#disarm();
    if (this.#timer !== undefined) this.#ticker = setInterval(this.tick, TICK_MS).unref();
  }

  #release(): void {
    this.saturated = undefined;
    this.limit = this.sampling ? Math.min(this.#maxInFlight, this.inFlight + this.#surge()) : this.#maxInFlight;
    this.#disarm();
  }

  /** Starts watching the loop's turns (the watching timer, once the guard is started). */
  #arm(): void {
    this.#armed = true;
    this.#growing = 0;
    this.#shortTurns = 0;
    this.#lastCalls = 0;
    this.#arrivedAtWatch = this.inFlight + this.#completed + this.#shedTotal;
    this.#tick = this.#now();
    if (this.#timer === undefined) return;
    this.#watchedElu = performance.eventLoopUtilization();
    this.#ticker = setInterval(this.watch, WATCH_MS).unref();
  }

  /** Stops the watching or ticking timer. */
  #disarm(): void {
    clearInterval(this.#ticker);
    this.#ticker = undefined;
    this.#armed = false;
  }

  /** How many calls beyond those in flight at a sample may be a surge: what the process completes in half of #surgeMs at its best. */
  #surge(): number {
    return this.#peakRate > 0 ? Math.min(SURGE_MAX, Math.max(SURGE_MIN, Math.round((this.#peakRate * this.#surgeMs) / 2))) : SURGE_MAX;
  }

  /** The share of the time since the last watch the loop was busy. */
  #watchedUtilization(): number {
    const elu = performance.eventLoopUtilization();
    const last = this.#watchedElu;
    this.#watchedElu = elu;
    if (last === undefined) return 0;
    const active = elu.active - last.active;
    const total = active + elu.idle - last.idle;
    return total > 0 ? active / total : 0;
  }

  /** The reason the last sample counts as overloaded (over both bars), or undefined. */
  #over(): ShedReason | undefined {
    const { maxEventLoopDelayMs, maxEventLoopUtilization } = this.#settings;
    const late = maxEventLoopDelayMs <= 0 || this.eventLoopDelayMs > maxEventLoopDelayMs;
    const busy = maxEventLoopUtilization <= 0 || this.eventLoopUtilization > maxEventLoopUtilization;
    if (!late || !busy) return undefined;
    return maxEventLoopDelayMs > 0 ? "event_loop_delay" : "event_loop_utilization";
  }

  /**
   * After `++inFlight > limit`: whether to refuse this call. An exempt call (health, readiness, metrics,
   * reflection) is served and stays counted. Beyond MAX_IN_FLIGHT_CALLS a call or stream is refused; while the
   * process is overloaded a call (not a stream) is refused if the loop's current turn has run long (one clock
   * read). A refused call is counted in `grpc_server_shed_total`, logged now and then, and no longer in flight
   * (the caller answers it at once).
   */
  refuse(kind: CallKind): boolean {
    if (kind === "exempt") return false;
    if (this.inFlight > this.#maxInFlight) return this.#shed("in_flight");
    if (kind === "stream") return false;
    let reason = this.saturated;
    if (reason === undefined) {
      // A surge of calls in flight while ungoverned: governed at once if the loop's timers are overdue by a
      // turn's budget, i.e. the loop has been reading and serving calls without a break since (a backlog).
      if (!this.sampling) return false;
      const overdue = this.#armed
        ? this.#now() - this.#tick - WATCH_MS - this.#surgeMs
        : this.#now() - this.#sampledAt - SAMPLE_INTERVAL_MS - (this.#watching ? this.#surgeMs : this.#budgetMs);
      if (overdue <= 0) return false;
      reason = this.#settings.maxEventLoopDelayMs > 0 ? "event_loop_delay" : "event_loop_utilization";
      this.#govern(reason);
      this.#admitUntil = 0; // this turn has run long already
    }
    if (this.inFlight <= this.#turnLimit && this.#now() <= this.#admitUntil) {
      this.#admitted++;
      return false;
    }
    this.#refused++;
    return this.#shed(reason);
  }

  #shed(reason: ShedReason): true {
    this.inFlight--;
    this.#shedTotal++;
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
