import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { Registry } from "prom-client";
import { CounterFamily, HistogramFamily, normaliseBounds } from "./families.js";

describe("metric families", () => {
  test("a counter series is created once per label set, at 0, and rendered by prom-client's registry", async () => {
    const registry = new Registry();
    const family = new CounterFamily("calls_total", "Calls.", ["service", "method"]).registerIn(registry);
    const a = family.series("svc", "A");
    assert.equal(family.series("svc", "A"), a, "the same object every time");
    family.series("svc", "B");
    a.value += 3;
    assert.equal(
      await registry.metrics(),
      [
        "# HELP calls_total Calls.",
        "# TYPE calls_total counter",
        'calls_total{service="svc",method="A"} 3',
        'calls_total{service="svc",method="B"} 0',
        "",
      ].join("\n"),
    );
  });

  test("label values are escaped by the registry", async () => {
    const registry = new Registry();
    new CounterFamily("odd_total", "Odd.", ["v"]).registerIn(registry).series('a"b\\c\nd').value = 1;
    assert.match(await registry.metrics(), /^odd_total\{v="a\\"b\\\\c\\nd"\} 1$/m);
  });

  test("the wrong number of label values is refused", () => {
    assert.throws(() => new CounterFamily("x_total", "X.", ["a", "b"]).series("only one"), /expected 2 label values/);
  });

  test("a histogram puts a value equal to a bound in that bucket, above the last one only in +Inf, and renders cumulatively", async () => {
    const registry = new Registry();
    const family = new HistogramFamily("latency_seconds", "Latency.", ["m"], [0.1, 1]).registerIn(registry);
    const s = family.series("Echo");
    for (const v of [0.05, 0.1, 0.5, 1, 7]) s.observe(v);
    assert.deepEqual([...s.counts], [2, 2]);
    assert.equal(s.count, 5);
    const lines = (await registry.metrics()).split("\n").filter((l) => !l.startsWith("#") && l);
    assert.deepEqual(lines, [
      'latency_seconds_bucket{m="Echo",le="0.1"} 2',
      'latency_seconds_bucket{m="Echo",le="1"} 4',
      'latency_seconds_bucket{m="Echo",le="+Inf"} 5',
      'latency_seconds_sum{m="Echo"} 8.65',
      'latency_seconds_count{m="Echo"} 5',
    ]);
  });

  test("bucket bounds are sorted, deduplicated and finite; none at all is an error", () => {
    assert.deepEqual(normaliseBounds([1, 0.5, 1, Number.POSITIVE_INFINITY, 0]), [0, 0.5, 1]);
    assert.throws(() => normaliseBounds([Number.POSITIVE_INFINITY]), /at least one/);
  });

  test("reset zeroes the series but keeps them (the hot path holds references)", async () => {
    const registry = new Registry();
    const counter = new CounterFamily("c_total", "C.", ["m"]).registerIn(registry);
    const histogram = new HistogramFamily("h_seconds", "H.", ["m"], [1]).registerIn(registry);
    const c = counter.series("x");
    const h = histogram.series("x");
    c.value = 5;
    h.observe(0.5);
    registry.resetMetrics();
    assert.equal(counter.series("x"), c);
    assert.equal(c.value, 0);
    assert.deepEqual([h.count, h.sum, [...h.counts]], [0, 0, [0]]);
  });
});
