import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { Code } from "../call/status.js";
import { AdaptiveThrottle } from "./adaptive-throttle.js";

const T = 1_000_000; // any start: the window follows the clock it is given

describe("AdaptiveThrottle (Google SRE client-side throttling, k = 2)", () => {
  test("a dependency failing every call: rejects with probability requests / (requests + 1) once minRequests were sent", () => {
    const throttle = new AdaptiveThrottle();
    for (let i = 0; i < 9; i++) throttle.record(Code.UNAVAILABLE, T);
    assert.equal(throttle.rejectProbability(T), 0, "9 failures: below minRequests (10), nothing rejected");
    throttle.record(Code.UNAVAILABLE, T);
    assert.equal(throttle.rejectProbability(T), 10 / 11);
    for (let i = 0; i < 90; i++) throttle.record(Code.DEADLINE_EXCEEDED, T);
    assert.equal(throttle.rejectProbability(T), 100 / 101);
  });

  test("the formula: max(0, (requests − 2·accepts) / (requests + 1))", () => {
    const throttle = new AdaptiveThrottle();
    for (let i = 0; i < 15; i++) throttle.record(Code.INTERNAL, T);
    for (let i = 0; i < 5; i++) throttle.record(Code.OK, T);
    assert.equal(throttle.rejectProbability(T), (20 - 2 * 5) / 21);
    for (let i = 0; i < 10; i++) throttle.record(Code.OK, T);
    assert.equal(throttle.rejectProbability(T), 0, "half the calls accepted: 30 − 2·15 = 0");
  });

  test("client errors are accepts: a dependency answering NotFound, InvalidArgument, … is up", () => {
    const throttle = new AdaptiveThrottle();
    const clientErrors = [
      Code.INVALID_ARGUMENT,
      Code.NOT_FOUND,
      Code.ALREADY_EXISTS,
      Code.PERMISSION_DENIED,
      Code.UNAUTHENTICATED,
      Code.FAILED_PRECONDITION,
      Code.OUT_OF_RANGE,
      Code.ABORTED,
      Code.CANCELLED,
    ];
    for (let i = 0; i < 100; i++) throttle.record(clientErrors[i % clientErrors.length]!, T);
    assert.equal(throttle.rejectProbability(T), 0);
  });

  test("failures leave the window as it slides: after windowMs the dependency is trusted again", () => {
    const throttle = new AdaptiveThrottle({ windowMs: 10_000 });
    for (let i = 0; i < 50; i++) throttle.record(Code.UNAVAILABLE, T);
    assert.ok(throttle.rejectProbability(T + 5_000) > 0.9, "half a window later the failures still count");
    for (let i = 0; i < 50; i++) throttle.record(Code.OK, T + 5_000);
    assert.equal(throttle.rejectProbability(T + 5_000), 0);
    assert.equal(throttle.rejectProbability(T + 10_000), 0, "the failures have left; the successes remain");
    for (let i = 0; i < 50; i++) throttle.record(Code.UNAVAILABLE, T + 10_000);
    assert.equal(throttle.rejectProbability(T + 10_000), 0, "50 failures and 50 successes in the window: 100 − 2·50 = 0");
    assert.equal(throttle.rejectProbability(T + 60_000), 0, "a window later, nothing is left");
  });

  test("k and minRequests are settable, and nonsense is refused", () => {
    const strict = new AdaptiveThrottle({ k: 1, minRequests: 0 });
    strict.record(Code.UNAVAILABLE, T);
    assert.equal(strict.rejectProbability(T), 1 / 2);
    strict.record(Code.OK, T);
    assert.equal(strict.rejectProbability(T), (2 - 1) / 3);
    assert.throws(() => new AdaptiveThrottle({ k: 0.5 }), /k must be ≥ 1/);
    assert.throws(() => new AdaptiveThrottle({ windowMs: 0 }), /windowMs > 0/);
  });
});
