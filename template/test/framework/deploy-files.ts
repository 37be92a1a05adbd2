// Reads deploy/ the way the tools do, for the deploy tests (test/framework/deploy-*.test.ts, test/system/deploy-tools.test.ts).
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { parse, parseAllDocuments } from "yaml";

export const ROOT = fileURLToPath(new URL("../..", import.meta.url));
export const K8S_DIR = join(ROOT, "deploy/k8s");
/** The package name: every Kubernetes object, label and the dashboard are named after it. */
export const APP: string = JSON.parse(readFileSync(join(ROOT, "package.json"), "utf8")).name;

// oxlint-disable-next-line typescript/no-explicit-any -- parsed YAML and JSON; the tests check their shape
export type Any = any;

export interface K8sObject {
  apiVersion: string;
  kind: string;
  metadata: { name: string; labels?: Record<string, string> };
  spec?: Any;
  data?: Record<string, string>;
}

/** A kustomize env file: KEY=VALUE lines, `#` comments and blank lines (values are taken literally). */
export function parseEnvFile(text: string): Record<string, string> {
  const data: Record<string, string> = {};
  for (const line of text.split("\n")) {
    const trimmed = line.trim();
    if (trimmed === "" || trimmed.startsWith("#")) continue;
    const eq = trimmed.indexOf("=");
    assert.ok(eq > 0, `not KEY=VALUE: ${line}`);
    data[trimmed.slice(0, eq)] = trimmed.slice(eq + 1);
  }
  return data;
}

export const kustomization = (): Any => parse(readFileSync(join(K8S_DIR, "kustomization.yaml"), "utf8"));

/** Every document of a multi-document YAML text, as plain objects. */
export function yamlObjects(text: string, what: string): K8sObject[] {
  return parseAllDocuments(text).flatMap((doc) => {
    assert.deepEqual(doc.errors, [], `${what} parses`);
    return doc.contents === null ? [] : [doc.toJS() as K8sObject];
  });
}

/**
 * What `kubectl kustomize deploy/k8s` builds, for the features this kustomization uses: its resources, the
 * generated ConfigMap (named without kustomize's content hash) and the image override.
 * test/system/deploy-tools.test.ts checks this against the real kubectl.
 */
export function buildManifests(): K8sObject[] {
  const k = kustomization();
  const objects = (k.resources as string[]).flatMap((rel) => yamlObjects(readFileSync(join(K8S_DIR, rel), "utf8"), rel));
  for (const gen of k.configMapGenerator ?? []) {
    const data = Object.assign({}, ...(gen.envs as string[]).map((f) => parseEnvFile(readFileSync(join(K8S_DIR, f), "utf8"))));
    const labels = gen.options?.labels;
    objects.push({ apiVersion: "v1", kind: "ConfigMap", metadata: { name: gen.name, ...(labels ? { labels } : {}) }, data });
  }
  for (const d of objects.filter((o) => o.kind === "Deployment")) {
    for (const c of d.spec.template.spec.containers) {
      const image = (k.images ?? []).find((i: Any) => i.name === c.image.split(/[:@]/)[0]);
      if (image) c.image = `${image.newName ?? image.name}${image.newTag ? `:${image.newTag}` : ""}`;
    }
  }
  return objects;
}

export const dashboard = (): Any => JSON.parse(readFileSync(join(ROOT, "deploy/grafana/dashboard.json"), "utf8"));

function panelsOf(list: Any[]): Any[] {
  return list.flatMap((p) => [p, ...panelsOf(p.panels ?? [])]);
}

/** Every panel, rows' nested panels included. */
export const dashboardPanels = (): Any[] => panelsOf(dashboard().panels);

/** Every PromQL text of the dashboard: panel targets and variable queries. */
export function dashboardQueries(): { where: string; expr: string }[] {
  return [
    ...dashboardPanels().flatMap((p) =>
      (p.targets ?? []).map((t: Any) => ({ where: `panel "${p.title}" ${t.refId}`, expr: t.expr as string })),
    ),
    ...(dashboard().templating.list as Any[])
      .filter((v) => v.type === "query")
      .map((v) => ({ where: `variable ${v.name}`, expr: v.query.query as string })),
  ];
}

/** The Node options the Deployment's container runs with (its NODE_OPTIONS): the heap caps the memory tests hold to. */
export function deploymentNodeOptions(): string {
  const deployment = buildManifests().find((o) => o.kind === "Deployment");
  const env = (deployment?.spec.template.spec.containers[0].env ?? []) as { name: string; value?: string }[];
  const value = env.find((e) => e.name === "NODE_OPTIONS")?.value;
  assert.ok(value, "the Deployment sets NODE_OPTIONS");
  return value;
}
