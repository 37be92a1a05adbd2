import assert from "node:assert/strict";
import { test } from "node:test";
import { type CallKind, type LoopSample, OverloadGuard, type ShedReason } from "./guard.js";

/** What a transport does with a new call: count it, and ask only when over the limit. */
function arrive(guard: OverloadGuard, kind: CallKind = "call"): "admitted" | "refused" {
  return ++guard.inFlight > guard.limit && guard.refuse(kind) ? "refused" : "admitted";
}

/** A clock the test moves (ms). */
class Clock {
  t = 1000;
  readonly now = (): number => this.t;
}

/** The defaults (OVERLOAD_MAX_EVENT_LOOP_DELAY_MS 20, OVERLOAD_MAX_EVENT_LOOP_UTILIZATION 0.9), no in-flight limit. */
function defaults(shed: ShedReason[] = [], clock = new Clock()): OverloadGuard {
  return new OverloadGuard({ maxEventLoopDelayMs: 20, maxEventLoopUtilization: 0.9, maxInFlightCalls: 0 }, (r) => shed.push(r), clock.now);
}

/** A sample this long (ms) with this mean timer delay and utilisation, after `completed` calls ended during it. */
function sample(guard: OverloadGuard, delayMs: number, utilization: number, elapsedMs = 100, completed = 1000): void {
  for (let i = 0; i < completed; i++) {
    guard.inFlight++;
    guard.release();
  }
  const s: LoopSample = { delayMs, utilization, elapsedMs };
  guard.sample(s);
}

const OVERLOADED = [100, 0.95] as const; // a climbing delay on a busy loop: calls wait in front of it
const CALM = [2, 0.5] as const;

test("beyond MAX_IN_FLIGHT_CALLS a call is refused and counted, an exempt one is served; an ended call frees its place", () => {
  const shed: ShedReason[] = [];
  const guard = new OverloadGuard({ maxEventLoopDelayMs: 0, maxEventLoopUtilization: 0, maxInFlightCalls: 2 }, (r) => shed.push(r));
  assert.equal(guard.enabled, true);
  assert.equal(guard.sampling, false);
  assert.deepEqual([arrive(guard), arrive(guard), arrive(guard)], ["admitted", "admitted", "refused"]);
  assert.equal(guard.inFlight, 2, "a refused call is not in flight");
  assert.equal(arrive(guard, "stream"), "refused", "a stream is refused beyond the limit too");
  assert.equal(arrive(guard, "exempt"), "admitted", "health, readiness, metrics and reflection are served");
  assert.equal(guard.inFlight, 3);
  guard.release();
  guard.release();
  assert.equal(arrive(guard), "admitted");
  assert.deepEqual(shed, ["in_flight", "in_flight"]);
});

test("with every check at 0 nothing is limited and the loop is not sampled", () => {
  const guard = new OverloadGuard({ maxEventLoopDelayMs: 0, maxEventLoopUtilization: 0, maxInFlightCalls: 0 });
  assert.equal(guard.enabled, false);
  assert.equal(guard.limit, Number.POSITIVE_INFINITY);
  for (let i = 0; i < 100_000; i++) assert.equal(arrive(guard), "admitted");
  guard.start(); // no timer to leave behind
  guard.stop();
});

test("an event-loop check alone samples the loop; the in-flight limit is then unlimited", () => {
  const guard = new OverloadGuard({ maxEventLoopDelayMs: 10, maxEventLoopUtilization: 0, maxInFlightCalls: 0 });
  assert.equal(guard.sampling, true);
  assert.equal(guard.limit, Number.POSITIVE_INFINITY);
  guard.start();
  guard.sample(); // an idle loop: not saturated
  assert.equal(guard.saturated, undefined);
  assert.equal(guard.limit, 256, "a surge beyond the calls held at the sample takes the slow path");
  assert.equal(arrive(guard), "admitted");
  guard.stop();
});

test("an overload is judged on the share of recent time over both bars: utilisation wandering around its bar engages it", () => {
  const guard = defaults();
  // Over, then one at 0.88 (a run of samples in a row breaks), over, 0.89, and so on.
  for (const elu of [0.95, 0.88, 0.92, 0.89, 0.91]) sample(guard, 100, elu);
  assert.equal(guard.saturated, undefined, "3 of 5 samples over: not yet");
  sample(guard, 100, 0.92);
  assert.equal(guard.saturated, "event_loop_delay", "4 of 6, the last two in a row");
  assert.equal(guard.limit, 0, "every new call goes to refuse()");
});

test("three samples over in a row engage it, two do not; one long turn of a second does", () => {
  const guard = defaults();
  for (let i = 0; i < 2; i++) sample(guard, ...OVERLOADED);
  assert.equal(guard.saturated, undefined);
  sample(guard, ...OVERLOADED);
  assert.equal(guard.saturated, "event_loop_delay");

  const other = defaults();
  sample(other, ...CALM);
  sample(other, 900, 1, 1000); // a backlog read in one go: the sampling timer ran once in a second
  assert.equal(other.saturated, "event_loop_delay");
});

test("a burst of 2 samples, a closed loop at capacity and a late but idle loop are not an overload", () => {
  const guard = defaults();
  // A burst: 200 ms over both bars (a GC storm, clients reconnecting), then calm.
  for (let i = 0; i < 2; i++) sample(guard, ...OVERLOADED);
  for (let i = 0; i < 20; i++) sample(guard, ...CALM);
  // A closed loop at capacity: busy all the time, but calls are answered as fast as they come (short turns).
  for (let i = 0; i < 100; i++) sample(guard, 8, 1);
  // A starved CPU at low load: timers late, the loop mostly idle.
  for (let i = 0; i < 100; i++) sample(guard, 80, 0.3);
  assert.equal(guard.saturated, undefined);
  for (let i = 0; i < 256; i++) assert.equal(arrive(guard), "admitted");
  assert.equal(guard.limit, 256, "beyond, refuse() looks at the clock");
  for (let i = 0; i < 1000; i++) assert.equal(arrive(guard), "admitted", "the sampling timer is not overdue: no flood");
});

test("ungoverned, a surge of calls while the watched loop's timers are overdue (one long turn reading a backlog) governs at once", () => {
  const shed: ShedReason[] = [];
  const clock = new Clock();
  const guard = new OverloadGuard(
    { maxEventLoopDelayMs: 20, maxEventLoopUtilization: 0.9, maxInFlightCalls: 0 },
    (r) => shed.push(r),
    clock.now,
  );
  sample(guard, ...CALM);
  for (let i = 0; i < 300; i++) arrive(guard, "stream"); // streams held (SSE, WebSocket): a baseline
  sample(guard, 12, 0.95); // turns long enough to watch (half the bar), not an overload
  assert.equal(guard.saturated, undefined);
  assert.equal(guard.limit, 556);
  clock.t += 5;
  guard.watch(0.5); // the loop at its timers
  clock.t += 75;
  for (let i = 0; i < 256; i++) assert.equal(arrive(guard), "admitted");
  assert.equal(arrive(guard), "admitted", "beyond the surge, but the watching timer is only 70 ms late: a burst the loop clears");
  clock.t += 11; // 81 ms late: four delay bars
  assert.equal(arrive(guard, "stream"), "admitted", "a stream is not governed by the loop");
  assert.equal(arrive(guard), "refused");
  assert.equal(guard.saturated, "event_loop_delay");
  assert.equal(arrive(guard), "refused", "the rest of this turn");
  guard.tick(); // the loop got round to its timers: the next turn admits again (2 ms, however late)
  assert.equal(arrive(guard), "admitted");
  assert.deepEqual(shed, ["event_loop_delay", "event_loop_delay"]);
});

test("a surge is counted in time: calls beyond those held at the sample that take 40 ms of work at the rate measured", () => {
  const guard = defaults();
  sample(guard, 2, 0.5, 100, 100); // 100 calls completed in 50 ms of a busy loop: 2 a ms, at any load
  assert.equal(guard.limit, 80);
  sample(guard, 2, 0.5, 100, 10_000); // calls of tens of µs: at most 256
  assert.equal(guard.limit, 256);
});

test("turns are watched only from a sample that saw them long (half the bar, a busy loop) until 40 short ones in a row or a sample under half the bar", () => {
  const clock = new Clock();
  const guard = defaults([], clock);
  for (let i = 0; i < 20; i++) sample(guard, 8, 1); // a closed loop at capacity, short turns: no timer every 5 ms
  sample(guard, 15, 0.5); // late but mostly idle
  assert.equal(guard.watchingTurns, false);
  sample(guard, 12, 0.95);
  assert.equal(guard.watchingTurns, true);
  for (let i = 0; i < 39; i++) turn(guard, clock, 6);
  assert.equal(guard.watchingTurns, true);
  turn(guard, clock, 6);
  assert.equal(guard.watchingTurns, false);

  // A closed loop at capacity whose turns now and then run long: watched for a sample at a time, not for good.
  sample(guard, 12, 0.95);
  for (let i = 0; i < 30; i++) turn(guard, clock, i % 10 === 0 ? 18 : 6);
  assert.equal(guard.watchingTurns, true);
  sample(guard, 8, 1);
  assert.equal(guard.watchingTurns, false);
});

/**
 * The loop reaches the watching timer after a turn of `turnMs`, busy `utilization` of it, having read `calls`
 * (by default as many as a process doing 10 calls a ms gets in that time: what came during a turn as long).
 */
function turn(guard: OverloadGuard, clock: Clock, turnMs: number, utilization = 1, calls = turnMs * 10): void {
  clock.t += turnMs;
  for (let i = 0; i < calls; i++) {
    guard.inFlight++;
    guard.release();
  }
  guard.watch(utilization);
}

test("turns growing as under an overload (each reading what came during the last) govern within three long turns", () => {
  const clock = new Clock();
  const guard = defaults([], clock);
  for (const ms of [6, 7, 9, 13, 21, 37]) turn(guard, clock, ms); // late by 1, 2, 4, 8, 16, 32 ms
  assert.equal(guard.saturated, undefined, "two long turns: not yet");
  turn(guard, clock, 69); // late by 64 ms, the third long turn in a row, growing
  assert.equal(guard.saturated, "event_loop_delay");
  assert.equal(guard.limit, 0);

  const faster = defaults([], clock); // 1.5× capacity: each turn 1.5 times the last
  for (const ms of [15, 20, 28, 40, 58]) turn(faster, clock, ms); // late by 10, 15, 23, 35, 53 ms
  assert.equal(faster.saturated, "event_loop_delay");
});

test("a pause, turns shrinking after it, turns that stay long or grow without reading more calls (a closed loop), on an idle loop (a starved CPU) or too short do not govern at once", () => {
  const clock = new Clock();
  const guard = defaults([], clock);
  // A 200 ms pause at a third of capacity: the turns after it read what came meanwhile, a third as long each time.
  for (const ms of [205, 72, 27, 12, 6, 5]) turn(guard, clock, ms);
  // The same at 0.7 of capacity: shrinking, but more slowly than GROWTH allows.
  for (const ms of [205, 145, 105, 75, 55, 40, 30, 20, 15, 10, 5]) turn(guard, clock, ms);
  // Timers 30-60 ms late with the loop mostly idle: the CPU is starved, not the loop.
  for (const ms of [35, 50, 65, 80]) turn(guard, clock, ms, 0.3);
  // A closed loop at capacity: long turns that neither grow nor shrink (the samples judge a standing queue).
  for (let i = 0; i < 20; i++) turn(guard, clock, 35 + (i % 2));
  // Its turns lengthened by collections or a stolen CPU: longer each time, but reading no more calls than its
  // clients have outstanding.
  for (const ms of [6, 13, 21, 37, 69]) turn(guard, clock, ms, 1, 128);
  // Turns of 12-14 ms (late by 7-9): under half the delay bar.
  for (let i = 0; i < 50; i++) turn(guard, clock, 12 + (i % 3));
  assert.equal(guard.saturated, undefined);
  assert.deepEqual([arrive(guard), guard.limit], ["admitted", Number.POSITIVE_INFINITY]);
});

test("while overloaded, a call is refused once the loop's turn has run long; the next turn admits again; streams and probes are served", () => {
  const shed: ShedReason[] = [];
  const clock = new Clock();
  const guard = defaults(shed, clock);
  for (let i = 0; i < 3; i++) sample(guard, ...OVERLOADED);
  assert.equal(guard.saturated, "event_loop_delay");
  // A turn: the loop was at its timers at t (engaged just then); calls are admitted for half the 20 ms bar
  // (plus the 2 ms the ticking timer may be behind), the rest of the turn is refused.
  clock.t += 3;
  assert.deepEqual([arrive(guard), arrive(guard)], ["admitted", "admitted"]);
  clock.t += 9;
  assert.equal(arrive(guard), "admitted", "12 ms after the timers ran");
  clock.t += 1;
  assert.deepEqual([arrive(guard), arrive(guard), arrive(guard)], ["refused", "refused", "refused"]);
  assert.deepEqual(shed, ["event_loop_delay", "event_loop_delay", "event_loop_delay"]);
  assert.equal(guard.inFlight, 3, "refused calls are not in flight");
  shed.length = 0;
  assert.equal(arrive(guard, "stream"), "admitted", "a new SSE, WebSocket or streaming call is one arrival, not a rate");
  assert.equal(arrive(guard, "exempt"), "admitted");
  // The next turn: the loop got round to its timers 11 ms late (13 ms after the last time, every 2 ms): what
  // it reads waited already, so 1 ms of the 12 is left, but a turn always gets 2.
  guard.tick();
  assert.equal(arrive(guard), "admitted");
  clock.t += 2;
  assert.equal(arrive(guard), "admitted");
  clock.t += 1;
  assert.equal(arrive(guard), "refused");
  clock.t += 2;
  guard.tick(); // 3 ms late: 9 ms of the 12 left
  clock.t += 9;
  assert.equal(arrive(guard), "admitted");
  sample(guard, ...OVERLOADED);
  assert.equal(guard.saturated, "event_loop_delay", "calls were refused in the last sample: still governed");
});

test("while overloaded, a turn admits at most the calls the process completes in its budget at its best", () => {
  const clock = new Clock();
  const guard = defaults([], clock);
  for (let i = 0; i < 3; i++) sample(guard, 100, 1, 100, 100); // 1 call per busy ms: 12 in a turn's 12 ms
  assert.equal(guard.saturated, "event_loop_delay");
  // One socket read brings 50 calls at once, before any is served: the turn's time has hardly begun.
  const outcomes = Array.from({ length: 50 }, () => arrive(guard));
  assert.equal(outcomes.filter((o) => o === "admitted").length, 12);
  for (let i = 0; i < 12; i++) guard.release(); // served
  clock.t += 2;
  guard.tick(); // the next turn
  assert.equal(arrive(guard), "admitted");
});

test("once a sample passes with the loop under its bars and next to nothing refused, calls are no longer governed", () => {
  const guard = defaults();
  for (let i = 0; i < 3; i++) sample(guard, ...OVERLOADED);
  assert.equal(guard.saturated, "event_loop_delay");
  sample(guard, ...OVERLOADED); // no call came, but the loop is still held up: still governed
  assert.equal(guard.saturated, "event_loop_delay");
  sample(guard, ...CALM); // no turn ran long
  assert.equal(guard.saturated, undefined);
  assert.equal(guard.limit, 256);
  for (let i = 0; i < 30; i++) sample(guard, ...CALM);
  for (let i = 0; i < 2; i++) sample(guard, ...OVERLOADED);
  assert.equal(guard.saturated, undefined, "a new overload needs the share again");
  sample(guard, ...OVERLOADED);
  assert.equal(guard.saturated, "event_loop_delay");
});

test("with only the utilisation check on, it engages on utilisation and turns of 10 ms", () => {
  const shed: ShedReason[] = [];
  const clock = new Clock();
  const guard = new OverloadGuard(
    { maxEventLoopDelayMs: 0, maxEventLoopUtilization: 0.9, maxInFlightCalls: 0 },
    (r) => shed.push(r),
    clock.now,
  );
  for (let i = 0; i < 3; i++) sample(guard, 0, 0.95);
  assert.equal(guard.saturated, "event_loop_utilization");
  clock.t += 12;
  assert.equal(arrive(guard), "admitted");
  clock.t += 1;
  assert.equal(arrive(guard), "refused");
  assert.deepEqual(shed, ["event_loop_utilization"]);
});
