import assert from "node:assert/strict";
import { afterEach, mock, test } from "node:test";
import { TimeoutBuckets } from "./timeout-buckets.js";

afterEach(() => mock.timers.reset());

interface Item {
  id: number;
  closed: boolean;
}

function buckets(expired: number[]) {
  return new TimeoutBuckets<Item>({
    timeoutMs: 1000,
    slices: 2,
    settled: (item) => item.closed,
    expire: (item) => {
      expired.push(item.id);
      return true;
    },
  });
}

test("an item still open is expired once, between one timeout and one timeout and a slice after it was added", () => {
  mock.timers.enable({ apis: ["setInterval"] });
  const expired: number[] = [];
  const b = buckets(expired);
  b.add({ id: 1, closed: false });
  mock.timers.tick(999);
  assert.deepEqual(expired, []);
  mock.timers.tick(501);
  assert.deepEqual(expired, [1]);
  mock.timers.tick(5000);
  assert.deepEqual(expired, [1], "looked at once");
  assert.equal(b.size, 0);
});

test("a settled item is never expired", () => {
  mock.timers.enable({ apis: ["setInterval"] });
  const expired: number[] = [];
  const b = buckets(expired);
  const item = { id: 1, closed: false };
  b.add(item);
  item.closed = true;
  mock.timers.tick(2000);
  assert.deepEqual(expired, []);
});

test("settled items are not kept until their sweep: a flood of short-lived items holds about twice those still open", () => {
  mock.timers.enable({ apis: ["setInterval"] });
  const expired: number[] = [];
  const b = buckets(expired);
  const open: Item[] = [];
  for (let id = 0; id < 10_000; id++) {
    const item = { id, closed: false };
    b.add(item);
    open.push(item);
    // Four in flight at a time, as a client with four calls outstanding.
    if (open.length > 4) open.shift()!.closed = true;
    if (id === 5_000) mock.timers.tick(500); // a sweep in the middle: the bucket that was newest is compacted
  }
  assert.ok(b.size <= 3 * 16 + 2 * 4, `${b.size} items held for 4 open`);
  mock.timers.tick(1500);
  assert.deepEqual(expired.sort(), open.map((i) => i.id).sort(), "the items still open are expired, and only they");
});
