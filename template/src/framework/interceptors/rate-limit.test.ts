import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { TokenBucket } from "./rate-limit.js";

describe("TokenBucket", () => {
  test("grants the burst at once, then refuses with the wait until the next token", () => {
    const bucket = new TokenBucket(2, 3, 0);
    assert.deepEqual([bucket.take(0), bucket.take(0), bucket.take(0)], [0, 0, 0]);
    assert.equal(bucket.take(0), 0.5);
  });

  test("refills at the rate and never above the burst", () => {
    const bucket = new TokenBucket(10, 2, 0);
    bucket.take(0);
    bucket.take(0);
    assert.equal(bucket.take(100), 0, "one token after 100 ms at 10/s");
    assert.ok(bucket.take(100) > 0);
    assert.equal(bucket.take(60_000), 0);
    assert.equal(bucket.take(60_000), 0);
    assert.ok(bucket.take(60_000) > 0, "a long idle period refills only up to the burst");
  });
});
