/**
 * deploy/ read by the real tools: `kubectl kustomize` builds exactly the objects test/deploy-k8s.test.ts
 * validates, and promtool parses every PromQL query of the Grafana dashboard.
 */
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { test } from "node:test";
import { APP, buildManifests, dashboardQueries, K8S_DIR, type K8sObject, yamlObjects } from "../deploy-files.js";

function run(tool: string, args: string[], why: string): string {
  const r = spawnSync(tool, args, { encoding: "utf8" });
  if (r.error) assert.fail(`${tool} is missing: the system tests need ${why} (${r.error.message})`);
  assert.equal(r.status, 0, `${tool} ${args.join(" ")}:\n${r.stdout}${r.stderr}`);
  return r.stdout;
}

test("kubectl kustomize builds the objects the manifest tests validate", () => {
  const out = run("kubectl", ["kustomize", K8S_DIR], "kubectl (the one `kubectl apply -k deploy/k8s` uses)");
  // kustomize appends a hash of the ConfigMap's content to its name, and to every reference to it.
  const hashed = yamlObjects(out, "kubectl kustomize").find((o) => o.kind === "ConfigMap")?.metadata.name ?? "";
  assert.match(hashed, new RegExp(`^${APP}-[a-z0-9]{10}$`));
  const built = yamlObjects(out.replaceAll(hashed, APP), "kubectl kustomize");
  const key = (o: K8sObject) => `${o.kind}/${o.metadata.name}`;
  const sorted = (list: K8sObject[]) => [...list].sort((a, b) => key(a).localeCompare(key(b)));
  assert.deepEqual(sorted(built), sorted(buildManifests()));
});

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
