import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { deadlineIn, grpcTimeout, grpcTimeoutWithinTimer, MAX_TIMER_MS, parseGrpcTimeout, timerDelay } from "./deadline.js";
import { Code, GrpcError } from "./status.js";

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

test("a deadline is at most a timer's reach away; none without a timeout", () => {
  assert.equal(deadlineIn(undefined), Number.POSITIVE_INFINITY);
  const before = Date.now();
  const far = deadlineIn(30 * 24 * 3600 * 1000);
  assert.ok(far >= before + MAX_TIMER_MS && far <= Date.now() + MAX_TIMER_MS);
  const near = deadlineIn(5000);
  assert.ok(near >= before + 5000 && near <= Date.now() + 5000);
});

describe("parseGrpcTimeout", () => {
  test("every unit of gRPC's wire format, in milliseconds", () => {
    assert.equal(parseGrpcTimeout(undefined), undefined);
    assert.equal(parseGrpcTimeout("2H"), 7_200_000);
    assert.equal(parseGrpcTimeout("3M"), 180_000);
    assert.equal(parseGrpcTimeout("10S"), 10_000);
    assert.equal(parseGrpcTimeout("250m"), 250);
    assert.equal(parseGrpcTimeout("1500u"), 1.5);
    assert.equal(parseGrpcTimeout("99999999n"), 99.999999);
    assert.equal(parseGrpcTimeout(" 10S "), 10_000, "surrounding spaces are trimmed");
  });

  test("anything else is INVALID_ARGUMENT", () => {
    for (const value of ["", "S", "1", "1s", "1.5S", "-1S", "123456789S", "1 S", ["1S", "2S"]]) {
      assert.throws(
        () => parseGrpcTimeout(value),
        (err: unknown) => err instanceof GrpcError && err.code === Code.INVALID_ARGUMENT && /Grpc-Timeout/.test(err.message),
        String(value),
      );
    }
  });
});

describe("grpcTimeout", () => {
  test("milliseconds rounded up while they fit in 8 digits, then coarser units", () => {
    assert.equal(grpcTimeout(150), "150m");
    assert.equal(grpcTimeout(0.2), "1m");
    assert.equal(grpcTimeout(-5), "0m");
    assert.equal(grpcTimeout(99_999_999), "99999999m");
    assert.equal(grpcTimeout(100_000_000), "100000S");
    assert.equal(grpcTimeout(2e11), "3333334M");
  });

  test("what it writes reads back as at least the time asked for", () => {
    for (const ms of [0, 1, 150.5, 99_999_999, 100_000_001, 2e11, 3e14]) {
      const read = parseGrpcTimeout(grpcTimeout(ms))!;
      assert.ok(read >= ms, `${ms} → ${grpcTimeout(ms)} → ${read}`);
    }
  });
});
