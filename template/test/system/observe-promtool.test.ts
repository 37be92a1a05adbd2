// `promtool check config` on the Prometheus config of compose.yaml (`make observe`), with the scrape target
// file `make observe` writes (scripts/observe-targets.ts) where the config's file_sd glob finds it.
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { test } from "node:test";
import { fileURLToPath } from "node:url";

const ROOT = fileURLToPath(new URL("../..", import.meta.url));
const MOUNTED = "/etc/prometheus/targets/*.json";

test("promtool accepts deploy/observe/prometheus.yml with the target file make observe writes", (t) => {
  const dir = mkdtempSync(join(tmpdir(), "promtool-"));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  const config = readFileSync(join(ROOT, "deploy/observe/prometheus.yml"), "utf8");
  assert.ok(config.includes(MOUNTED), "the config reads the targets from the directory compose.yaml mounts");
  writeFileSync(join(dir, "prometheus.yml"), config.replace(MOUNTED, join(dir, "targets/*.json")));
  const written = spawnSync(process.execPath, ["--import", "tsx", "scripts/observe-targets.ts", join(dir, "targets/service.json")], {
    cwd: ROOT,
    env: { ...process.env, HTTP_PORT: "9091", ADMIN_PORT: "" },
    encoding: "utf8",
  });
  assert.equal(written.status, 0, written.stderr);

  const r = spawnSync("promtool", ["check", "config", join(dir, "prometheus.yml")], { encoding: "utf8" });
  assert.equal(r.error, undefined, "promtool is installed (Debian's prometheus package)");
  const out = `${r.stdout}${r.stderr}`;
  assert.equal(r.status, 0, out);
  assert.match(out, /SUCCESS/);
  assert.doesNotMatch(out, /WARNING/, "the target file was found and read");
});
