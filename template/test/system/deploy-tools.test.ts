/**
 * deploy/ read by a real tool: promtool parses every PromQL query of the Grafana dashboard.
 * (kubectl is not in Debian at a version that builds this kustomization, so the manifests are
 * built and validated against the Kubernetes schemas in test/deploy-k8s.test.ts instead.)
 */
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
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
