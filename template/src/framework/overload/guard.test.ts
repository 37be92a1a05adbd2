import assert from "node:assert/strict";
import { test } from "node:test";
import { OverloadGuard, type ShedReason } from "./guard.js";

/** What a transport does with a new call: count it, and ask only when over the limit. */
function arrive(guard: OverloadGuard, exempt = false): "admitted" | "refused" {
  return ++guard.inFlight > guard.limit && guard.refuse(exempt) ? "refused" : "admitted";
}

test("beyond MAX_IN_FLIGHT_CALLS a call is refused and counted, an exempt one is served; an ended call frees its place", () => {
  const shed: ShedReason[] = [];
  const guard = new OverloadGuard({ maxEventLoopDelayMs: 0, maxEventLoopUtilization: 0, maxInFlightCalls: 2 }, (r) => shed.push(r));
  assert.equal(guard.enabled, true);
  assert.equal(guard.sampling, false);
  assert.deepEqual([arrive(guard), arrive(guard), arrive(guard)], ["admitted", "admitted", "refused"]);
  assert.equal(guard.inFlight, 2, "a refused call is not in flight");
  assert.equal(arrive(guard, true), "admitted", "health, readiness, metrics and reflection are served");
  assert.equal(guard.inFlight, 3);
  guard.release();
  guard.release();
  assert.equal(arrive(guard), "admitted");
  assert.deepEqual(shed, ["in_flight"]);
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
  assert.equal(arrive(guard), "admitted");
  guard.stop();
});
