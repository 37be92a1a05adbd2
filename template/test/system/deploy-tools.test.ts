/**
 * deploy/ read by real tools: promtool parses every PromQL query of the Grafana dashboard; haproxy checks its configuration.
 * (kubectl is not in Debian at a version that builds this kustomization, so the manifests are
 * built and validated against the Kubernetes schemas in test/framework/deploy-k8s-schema.test.ts instead,
 * where the framework is developed.)
 */
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { test } from "node:test";
import { dashboardQueries } from "../framework/deploy-files.js";

function run(tool: string, args: string[], why: string): string {
  const r = spawnSync(tool, args, { encoding: "utf8" });
  if (r.error) assert.fail(`${tool} is missing: the system tests need ${why} (${r.error.message})`);
  assert.equal(r.status, 0, `${tool} ${args.join(" ")}:\n${r.stdout}${r.stderr}`);
  return r.stdout;
}

test("promtool parses every query of the Grafana dashboard", () => {
  // Grafana's variables made concrete; each query becomes a recording rule (variable queries are Grafana's own syntax).
  const concrete = (e: string) => e.replaceAll("$__rate_interval", "1m").replace(/\$(\w+)/g, "$1");
  const rules = dashboardQueries()
    .filter((q) => !q.expr.startsWith("label_values("))
    .map((q, i) => `      - record: dashboard:query${i}\n        expr: ${JSON.stringify(concrete(q.expr))}`);
  const dir = mkdtempSync(join(tmpdir(), "dashboard-rules-"));
  try {
    const file = join(dir, "rules.yaml");
    writeFileSync(file, `groups:\n  - name: dashboard\n    rules:\n${rules.join("\n")}\n`);
    const out = run("promtool", ["check", "rules", file], "Debian's prometheus package");
    assert.match(out, new RegExp(`SUCCESS: ${rules.length} rules found`));
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test("haproxy accepts deploy/haproxy/haproxy.cfg, and its checks, backends and retries are the documented ones", () => {
  const env = {
    PATH: process.env.PATH ?? "",
    FLEET_LISTEN: "127.0.0.1",
    FLEET_GRPC_PORT: "8443",
    FLEET_HTTP_PORT: "8080",
    FLEET_STATS_SOCKET: join(tmpdir(), "haproxy-check.sock"),
    REPLICA_1: "10.0.0.11",
    REPLICA_2: "10.0.0.12",
    REPLICA_3: "10.0.0.13",
    REPLICA_4: "10.0.0.14",
    REPLICA_GRPC_PORT: "9090",
    REPLICA_HTTP_PORT: "9091",
  };
  const r = spawnSync("haproxy", ["-c", "-f", "deploy/haproxy/haproxy.cfg"], { encoding: "utf8", env });
  if (r.error) assert.fail(`haproxy is missing: the system tests need Debian's haproxy (${r.error.message})`);
  assert.equal(r.status, 0, `haproxy -c:\n${r.stdout}${r.stderr}`);
  assert.match(r.stdout + r.stderr, /Configuration file is valid/);
  // What docs/deployment.md and make fleet rely on: readiness checks, gRPC over HTTP/2 to every replica.
  const cfg = readFileSync("deploy/haproxy/haproxy.cfg", "utf8");
  assert.match(cfg, /option httpchk GET \/readycheck/);
  assert.equal(cfg.match(/^\s+server r\d .* proto h2 check port "\$\{REPLICA_HTTP_PORT\}"/gm)?.length, 4);
  assert.match(cfg, /retry-on conn-failure empty-response 503/);
});
