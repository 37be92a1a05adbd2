// deploy/grafana/dashboard.json is built on what the service really exposes: every metric and label its
// PromQL uses is on the /metrics output of a started service. (test/system/deploy-tools.test.ts has promtool
// parse every query.)
import assert from "node:assert/strict";
import { PerformanceObserver } from "node:perf_hooks";
import { before, describe, test } from "node:test";
import { setImmediate as nextTurn, setTimeout as sleep } from "node:timers/promises";
import { Code } from "../../src/framework/index.js";
import { startTestServer } from "../../src/framework/testing/harness.js";
import { statusOf } from "../../src/framework/testing/status.js";
import { FixtureService } from "../gen/fixture/v1/fixture_pb.js";
import { type Any, APP, dashboardPanels, dashboardQueries, dashboard as readDashboard } from "./deploy-files.js";
import { fixtureService } from "./fixtures/fixture-service.js";

const dashboard = readDashboard();
const panels = dashboardPanels();
const variables: Any[] = dashboard.templating.list;
const queries = dashboardQueries();

/** Labels Prometheus adds to every series of a target (the ServiceMonitor's job, namespace, pod...). */
const TARGET_LABELS = new Set(["job", "namespace", "pod", "instance", "service", "container", "endpoint"]);
const FUNCTIONS = new Set([
  "sum",
  "count",
  "max",
  "min",
  "avg",
  "rate",
  "irate",
  "increase",
  "histogram_quantile",
  "label_values",
  "clamp_min",
  "abs",
]);
const KEYWORDS = new Set(["and", "or", "unless", "bool", "offset"]);

interface Use {
  metrics: { name: string; labels: string[] }[];
  /** Labels of by/without/on/ignoring clauses. */
  grouping: string[];
}

/** The metric names and label names a PromQL expression uses. */
function uses(expr: string): Use {
  let s = expr.replace(/"(?:[^"\\]|\\.)*"/g, '""'); // string literals (label values, Grafana variables)
  s = s.replace(/\[[^\]]*\]/g, ""); // range selectors
  s = s.replace(/(?<![\w.])\d+(?:\.\d+)?(?:e[+-]?\d+)?/gi, " "); // numbers (so `1e3` is not an identifier)
  const grouping: string[] = [];
  s = s.replace(/\b(by|without|on|ignoring|group_left|group_right)\s*\(([^)]*)\)/g, (_, _kw, labels: string) => {
    grouping.push(
      ...labels
        .split(",")
        .map((l) => l.trim())
        .filter(Boolean),
    );
    return " ";
  });
  // label_values(metric{...}, label): the second argument is a label name.
  s = s.replace(/^\s*label_values\s*\((.*),\s*([a-zA-Z_]\w*)\s*\)\s*$/, (_, arg: string, label: string) => {
    grouping.push(label);
    return ` (${arg}) `;
  });
  const metrics: Use["metrics"] = [];
  for (const m of s.matchAll(/([a-zA-Z_:][\w:]*)\s*(\{[^}]*\})?\s*(\()?/g)) {
    const [, name, matchers, call] = m as unknown as [string, string, string | undefined, string | undefined];
    if (call && !matchers) {
      assert.ok(FUNCTIONS.has(name), `unknown function ${name} in ${expr}`);
      continue;
    }
    if (KEYWORDS.has(name)) continue;
    const labels = [...(matchers ?? "").matchAll(/([a-zA-Z_]\w*)\s*(?:=~|!~|!=|=)/g)].map((l) => l[1] as string);
    metrics.push({ name, labels });
  }
  return { metrics, grouping };
}

/** Sample names of a Prometheus text exposition, each with the label names its series carry. */
function exposition(text: string): Map<string, Set<string>> {
  const names = new Map<string, Set<string>>();
  for (const line of text.split("\n")) {
    if (line === "" || line.startsWith("#")) continue;
    const m = /^([a-zA-Z_:][\w:]*)(?:\{(.*)\})? \S+$/.exec(line);
    assert.ok(m, `unparsable line: ${line}`);
    const labels = names.get(m[1] as string) ?? new Set<string>();
    for (const l of (m[2] ?? "").matchAll(/([a-zA-Z_]\w*)="/g)) labels.add(l[1] as string);
    names.set(m[1] as string, labels);
  }
  return names;
}

/** Makes garbage until V8 collects some: the GC histogram's series appear with the first collection. */
async function untilGarbageCollected(): Promise<void> {
  let collected = false;
  const observer = new PerformanceObserver(() => {
    collected = true;
  });
  observer.observe({ entryTypes: ["gc"] });
  const deadline = Date.now() + 10_000;
  let keep: unknown[] = [];
  while (!collected && Date.now() < deadline) {
    keep = Array.from({ length: 100_000 }, (_, i) => ({ i }));
    await nextTurn();
  }
  observer.disconnect();
  assert.ok(keep.length > 0 && collected, "a garbage collection happened");
  await sleep(10); // prom-client's own observer records it on the same turn
}

describe("deploy/grafana/dashboard.json", () => {
  let exposed = new Map<string, Set<string>>();

  before(async () => {
    // Overload protection's event-loop gauges exist while the loop is sampled (the harness turns that off):
    // on, with thresholds it never reaches.
    const server = await startTestServer([fixtureService], { OVERLOAD_MAX_EVENT_LOOP_DELAY_MS: "1000000" });
    try {
      // Outbound client series (grpc_client_*) appear once a client exists: the service calls itself, one call retried.
      const outbound = server.app.createClient(FixtureService, server.grpcAddress, { maxAttempts: 2 });
      try {
        await outbound.echo({ message: "out" });
        await statusOf(outbound.fail({ code: Code.UNAVAILABLE }));
      } finally {
        outbound.close();
      }
      await untilGarbageCollected();
      const res = await fetch(`${server.httpUrl}/metrics`);
      assert.equal(res.status, 200);
      exposed = exposition(await res.text());
    } finally {
      await server.close();
    }
    // Rejection series appear with the first rejection: a service with auth on, called without credentials.
    const authed = await startTestServer([fixtureService], { JWT_SECRET: "grafana-test-secret-0123456789abcdef" });
    try {
      assert.equal((await statusOf(authed.client(FixtureService).echo({ message: "no token" }))).code, Code.UNAUTHENTICATED);
      for (const [name, labels] of exposition(await (await fetch(`${authed.httpUrl}/metrics`)).text())) {
        exposed.set(name, new Set([...(exposed.get(name) ?? []), ...labels]));
      }
    } finally {
      await authed.close();
    }
  });

  test("is a Grafana dashboard named after the service, on a Prometheus data source variable", () => {
    assert.equal(dashboard.title, APP);
    assert.equal(typeof dashboard.schemaVersion, "number");
    const ds = variables.find((v) => v.type === "datasource");
    assert.equal(ds?.query, "prometheus");
    const job = variables.find((v) => v.name === "job");
    assert.equal(job?.current?.value, APP, "the job the ServiceMonitor creates is the Service's name");
    const ids = panels.map((p) => p.id);
    assert.equal(new Set(ids).size, ids.length, "panel ids are unique");
    for (const p of panels.filter((x) => x.type !== "row")) {
      assert.equal(p.datasource?.uid, `\${${ds.name}}`, `panel "${p.title}" uses the data source variable`);
      assert.ok(p.gridPos.x + p.gridPos.w <= 24, `panel "${p.title}" fits the grid`);
      assert.ok(p.targets.length > 0, `panel "${p.title}" has queries`);
    }
  });

  test("covers traffic, errors, latency, the gateway, rate limiting, rejections by code, outbound calls, workers, the process, and replicas side by side with shed calls", () => {
    const all = queries.map((q) => q.expr).join("\n");
    for (const needed of [
      /rate\(grpc_server_handled_total/,
      /sum by \(grpc_code\)/,
      /histogram_quantile\(0\.5, .*grpc_server_handling_seconds_bucket/,
      /histogram_quantile\(0\.95, .*grpc_server_handling_seconds_bucket/,
      /histogram_quantile\(0\.99, .*grpc_server_handling_seconds_bucket/,
      /http_server_requests_total/,
      /http_server_request_duration_seconds_bucket/,
      /grpc_server_rate_limited_total/,
      /sum by \(grpc_code\) \(rate\(grpc_server_handled_total\{[^}]*grpc_code=~"Unauthenticated\|[^"]*ResourceExhausted\|InvalidArgument\|DeadlineExceeded"/,
      /sum by \(reason\) \(rate\(grpc_server_unauthenticated_total/,
      /sum by \(grpc_service, grpc_method\) \(rate\(grpc_client_handled_total/,
      /sum by \(grpc_code\) \(rate\(grpc_client_handled_total\{[^}]*grpc_code!="OK"/,
      /rate\(grpc_client_retries_total/,
      /histogram_quantile\(0\.5, .*grpc_client_handling_seconds_bucket/,
      /histogram_quantile\(0\.99, .*grpc_client_handling_seconds_bucket/,
      /process_resident_memory_bytes/,
      /process_cpu_seconds_total/,
      /nodejs_eventloop_lag/,
      /worker_running/,
      /worker_failed_total/,
      // Replicas side by side, and overload protection.
      /sum by \(pod\) \(rate\(grpc_server_handled_total/,
      /histogram_quantile\(0\.99, sum by \(le, pod\) \(rate\(grpc_server_handling_seconds_bucket/,
      /sum by \(pod, reason\) \(rate\(grpc_server_shed_total/,
      /grpc_server_event_loop_utilization/,
    ]) {
      assert.match(all, needed);
    }
    const byReplica = panels.find((p) => p.title === "p99 latency by replica");
    assert.equal(byReplica?.targets[0]?.exemplar, true, "the latency by replica shows exemplars (links to traces)");
  });

  test("every metric and label it queries is on the real /metrics output", () => {
    assert.ok(exposed.has("grpc_server_handled_total"), "the scrape has the gRPC metrics");
    assert.ok(exposed.has("grpc_client_retries_total"), "the scrape has the outbound client metrics");
    const problems: string[] = [];
    for (const { where, expr } of queries) {
      const { metrics, grouping } = uses(expr);
      assert.ok(metrics.length > 0, `${where} queries a metric`);
      const labelsOfExpr = new Set<string>();
      for (const { name, labels } of metrics) {
        // worker_* exist only when the service has workers; without any, the Workers row just shows no data.
        if (name.startsWith("worker_") && (fixtureService.workers ?? []).length === 0) continue;
        const known = exposed.get(name);
        if (!known) {
          problems.push(`${where}: ${name} is not exposed`);
          continue;
        }
        for (const l of known) labelsOfExpr.add(l);
        for (const l of labels) if (!known.has(l) && !TARGET_LABELS.has(l)) problems.push(`${where}: ${name} has no label ${l}`);
      }
      for (const l of grouping) if (!labelsOfExpr.has(l) && !TARGET_LABELS.has(l)) problems.push(`${where}: no metric has label ${l}`);
    }
    assert.deepEqual(problems, []);
  });

  test("the metric check finds names that do not exist", () => {
    const { metrics, grouping } = uses(
      'histogram_quantile(0.99, sum by (le, route) (rate(http_server_request_duration_seconds_bucket{job="$job", route!=""}[$__rate_interval]))) / 1e3 + grpc_server_nope_total',
    );
    assert.deepEqual(metrics, [
      { name: "http_server_request_duration_seconds_bucket", labels: ["job", "route"] },
      { name: "grpc_server_nope_total", labels: [] },
    ]);
    assert.deepEqual(grouping, ["le", "route"]);
    assert.ok(!exposed.has("grpc_server_nope_total"));
  });
});
