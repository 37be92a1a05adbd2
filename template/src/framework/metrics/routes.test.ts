import assert from "node:assert/strict";
import { test } from "node:test";
import Fastify from "fastify";
import { registerMetricsRoute, wantsOpenMetrics } from "./routes.js";
import { createServerMetrics, type ServerMetrics } from "./server-metrics.js";

const CONFIG = { DISABLE_PROMETHEUS: false, ENABLE_PROMETHEUS_GRPC_HISTOGRAM: false, PROMETHEUS_GRPC_HISTOGRAM_BUCKETS: [0.1, 1] };

/** The metric families one scrape of /metrics lists. */
async function families(afterReady?: (task: () => void) => void): Promise<string[]> {
  const app = Fastify();
  registerMetricsRoute(app, { metrics: createServerMetrics(CONFIG) as ServerMetrics, afterReady });
  try {
    const res = await app.inject({ url: "/metrics" });
    assert.equal(res.statusCode, 200);
    return [...res.body.matchAll(/^# TYPE (\S+)/gm)].map((m) => m[1] as string).sort();
  } finally {
    await app.close();
  }
}

test("a scrape before the after-ready collectors have started lists the same families as one after", async () => {
  const queued: (() => void)[] = [];
  const early = await families((task) => queued.push(task));
  assert.equal(queued.length, 1, "the Node process collectors are left to after ready");
  const atOnce = await families();
  assert.deepEqual(early, atOnce);
  for (const name of ["process_cpu_user_seconds_total", "nodejs_heap_size_total_bytes", "nodejs_eventloop_lag_seconds"]) {
    assert.ok(early.includes(name), name);
  }
  queued[0]!(); // the warm-up coming after the scrape starts nothing twice
});

test("OpenMetrics is served when the scraper prefers it (Prometheus's default Accept), the text format otherwise", () => {
  const prometheus =
    "application/openmetrics-text;version=1.0.0,application/openmetrics-text;version=0.0.1;q=0.75,text/plain;version=0.0.4;q=0.5,*/*;q=0.1";
  assert.equal(wantsOpenMetrics(prometheus), true);
  assert.equal(wantsOpenMetrics("application/openmetrics-text"), true);
  assert.equal(wantsOpenMetrics(undefined), false);
  assert.equal(wantsOpenMetrics("*/*"), false);
  assert.equal(wantsOpenMetrics("text/plain;version=0.0.4"), false);
  assert.equal(wantsOpenMetrics("text/plain,application/openmetrics-text;q=0.5"), false);
  assert.equal(wantsOpenMetrics("application/openmetrics-text;q=0"), false);
});
