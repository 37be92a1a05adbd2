import assert from "node:assert/strict";
import { test } from "node:test";
import { grpcTimeoutWithinTimer, MAX_TIMER_MS, timerDelay } from "./deadline.js";

test("a grpc-timeout a timer can hold is kept; one above 2^31-1 ms becomes 2147483S, however it is written", () => {
  for (const kept of ["1m", "10000m", "99999999m", "99999999u", "2147483S", "35791M", "596H", "0S", "", "abc", "S"]) {
    assert.equal(grpcTimeoutWithinTimer(kept), kept, kept);
  }
  for (const long of ["2147484S", "35792M", "597H", "720H", "99999999H", "00000720H"]) {
    assert.equal(grpcTimeoutWithinTimer(long), "2147483S", long);
  }
  // Malformed values that grpc-js still reads (the first 1–8 digits before a unit): clamped the same way.
  for (const loose of ["12345678901234567890S", "x99999999Hy", "720 H"]) assert.equal(grpcTimeoutWithinTimer(loose), "2147483S", loose);
});

test("a timer's delay is 0 once the deadline has passed and never more than a timer holds", () => {
  assert.equal(timerDelay(Date.now() - 1000), 0);
  assert.equal(timerDelay(Date.now() + 30 * 24 * 3600 * 1000), MAX_TIMER_MS);
  const soon = timerDelay(Date.now() + 5000);
  assert.ok(soon > 4000 && soon <= 5000);
});
