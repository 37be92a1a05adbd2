// `promtool check config` on the Prometheus config of compose.yaml (`make observe`).
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { test } from "node:test";
import { fileURLToPath } from "node:url";

const ROOT = fileURLToPath(new URL("../..", import.meta.url));

test("promtool accepts deploy/observe/prometheus.yml", () => {
  const r = spawnSync("promtool", ["check", "config", "deploy/observe/prometheus.yml"], { cwd: ROOT, encoding: "utf8" });
  assert.equal(r.error, undefined, "promtool is installed (Debian's prometheus package)");
  assert.equal(r.status, 0, `${r.stdout}${r.stderr}`);
  assert.match(`${r.stdout}${r.stderr}`, /SUCCESS/);
});
