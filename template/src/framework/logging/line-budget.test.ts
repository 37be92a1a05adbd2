import assert from "node:assert/strict";
import { test } from "node:test";
import { LineBudget } from "./line-budget.js";

test("a burst gets perSecond lines, then every further line is dropped and counted on the next one written", () => {
  const budget = new LineBudget(3);
  const taken = Array.from({ length: 1000 }, () => budget.take());
  const written = taken.filter((t) => t !== undefined);
  // However slow this loop runs, it cannot last long enough to refill more than a few lines.
  assert.ok(written.length >= 3 && written.length < 20, `${written.length} lines written`);
  assert.deepEqual(taken.slice(0, 3), [0, 0, 0]);
  assert.equal(taken[3], undefined);
  const dropped = written.reduce((sum, d) => sum + d!, 0);
  const pending = 1000 - written.length - dropped;
  assert.ok(pending >= 0, "every dropped line is reported once, by the next line written");
});
