// The scaffolder's --admin-port and --auth choices shape the Dockerfile and deploy/k8s/ (generator/deploy.ts),
// checked on the real template's files and on a whole rendered repository.
import assert from "node:assert/strict";
import fs from "node:fs";
import path from "node:path";
import { before, describe, it } from "node:test";
import { parseAllDocuments } from "yaml";
import { requiredSecrets, shapeConfigEnv, shapeDockerfile, shapeManifest } from "../../generator/deploy.js";
import type { Choices } from "../../generator/env-file.js";
import { deriveNames } from "../../generator/names.js";
import { render } from "../../generator/render.js";
import { leftoverExampleTokens, makeCliTemplate, parseEnv, REAL_TEMPLATE, tmpDir } from "./helpers.js";

const defaults: Choices = { auth: "none", unixSocket: false, sse: true, install: false, git: false };
const read = (rel: string) => fs.readFileSync(path.join(REAL_TEMPLATE, rel), "utf8");

// oxlint-disable-next-line typescript/no-explicit-any -- parsed YAML, navigated field by field
type K8sObject = { kind: string; metadata: { name: string }; spec: Record<string, any> };
const objects = (text: string): K8sObject[] => parseAllDocuments(text as string).map((d) => d.toJS() as K8sObject);
const one = (text: string, kind: string) => {
  const found = objects(text).filter((o) => o.kind === kind);
  assert.equal(found.length, 1, `one ${kind}`);
  return found[0] as K8sObject;
};
const container = (deployment: K8sObject) => deployment.spec.template.spec.containers[0];
const portNames = (ports: { name: string }[]) => ports.map((p) => p.name);
const secretRefs = (deployment: K8sObject) =>
  Object.fromEntries(
    (container(deployment).env as { name: string; valueFrom?: { secretKeyRef?: { optional?: boolean } } }[])
      .filter((e) => e.valueFrom?.secretKeyRef)
      .map((e) => [e.name, e.valueFrom?.secretKeyRef?.optional]),
  );

describe("shaping the template's deploy files by the choices", () => {
  it("leaves every file byte-for-byte as it is with the defaults", () => {
    for (const rel of ["deployment.yaml", "service.yaml", "servicemonitor.yaml", "hpa.yaml", "pdb.yaml", "kustomization.yaml"]) {
      const text = read(`deploy/k8s/${rel}`);
      assert.equal(shapeManifest(text, defaults), text, rel);
      assert.equal(shapeManifest(text, { ...defaults, unixSocket: true, sse: false }), text, rel);
    }
    assert.equal(shapeDockerfile(read("Dockerfile"), defaults), read("Dockerfile"));
    assert.equal(shapeConfigEnv(read("deploy/k8s/config.env"), defaults), read("deploy/k8s/config.env"));
  });

  it("--admin-port: EXPOSE, a container port, a Service port and the ServiceMonitor move to it", () => {
    const c = { ...defaults, adminPort: 9095 };
    const expose = shapeDockerfile(read("Dockerfile"), c).split("\n").filter((l) => l.startsWith("EXPOSE"));
    assert.deepEqual(expose, ["EXPOSE 9090 9091 9095"]);
    assert.equal(shapeDockerfile(shapeDockerfile(read("Dockerfile"), c), c), shapeDockerfile(read("Dockerfile"), c), "idempotent");

    const ports = container(one(shapeManifest(read("deploy/k8s/deployment.yaml"), c), "Deployment")).ports;
    assert.deepEqual(ports, [
      { name: "grpc", containerPort: 9090 },
      { name: "http", containerPort: 9091 },
      { name: "admin", containerPort: 9095 },
    ]);

    const services = objects(shapeManifest(read("deploy/k8s/service.yaml"), c)).filter((o) => o.kind === "Service");
    const [main, headless] = services as [K8sObject, K8sObject];
    assert.deepEqual(portNames(main.spec.ports), ["grpc", "http", "admin"]);
    assert.deepEqual(main.spec.ports[2], { name: "admin", port: 9095, targetPort: "admin", appProtocol: "http" });
    assert.deepEqual(portNames(headless.spec.ports), ["grpc"], "the headless gRPC Service gets no admin port");

    const monitor = one(shapeManifest(read("deploy/k8s/servicemonitor.yaml"), c), "ServiceMonitor");
    assert.deepEqual(
      monitor.spec.endpoints.map((e: { port: string; path: string }) => [e.port, e.path]),
      [["admin", "/metrics"]],
    );

    assert.equal(parseEnv(shapeConfigEnv(read("deploy/k8s/config.env"), c)).get("ADMIN_PORT"), "9095");
  });

  it("keeps comments and the rest of each file as written", () => {
    const text = read("deploy/k8s/deployment.yaml");
    const shaped = shapeManifest(text, { ...defaults, adminPort: 9095, auth: "both" });
    const added = shaped.split("\n").filter((l) => !text.split("\n").includes(l));
    assert.deepEqual(added.map((l) => l.trim()), ["- name: admin", "containerPort: 9095", "optional: false", "optional: false"]);
    for (const line of text.split("\n").filter((l) => l.trim().startsWith("#"))) assert.ok(shaped.includes(line), line);
  });

  for (const auth of ["none", "jwt", "api-key", "both"] as const) {
    it(`--auth ${auth}: the chosen secrets are required, the others optional`, () => {
      const c = { ...defaults, auth };
      const refs = secretRefs(one(shapeManifest(read("deploy/k8s/deployment.yaml"), c), "Deployment"));
      const required = requiredSecrets(c);
      assert.deepEqual(refs, {
        JWT_SECRET: !required.includes("JWT_SECRET"),
        API_KEYS: !required.includes("API_KEYS"),
      });
      const config = parseEnv(shapeConfigEnv(read("deploy/k8s/config.env"), c));
      assert.equal(config.get("HTTP_HEADER_PREFIXES"), auth === "api-key" || auth === "both" ? "x-api-key" : undefined);
      for (const secret of ["JWT_SECRET", "API_KEYS"]) assert.ok(!config.has(secret), `no ${secret} in the ConfigMap`);
    });
  }

  it("edits nothing it does not recognise", () => {
    const foreign = "metadata:\n  name: x\nspec:\n  image: y\n";
    assert.equal(shapeManifest(foreign, { ...defaults, adminPort: 9095, auth: "both" }), foreign);
    assert.equal(shapeManifest("", { ...defaults, adminPort: 9095 }), "");
    const broken = "kind: Service\nspec: [\n";
    assert.equal(shapeManifest(broken, { ...defaults, adminPort: 9095 }), broken);
  });
});

describe("a rendered repository with --admin-port 9095 --auth both --unix-socket --no-sse", () => {
  let out = "";
  const file = (rel: string) => fs.readFileSync(path.join(out, rel), "utf8");

  before(async () => {
    const root = tmpDir();
    out = path.join(root, "pay-service");
    await render({
      templateDir: makeCliTemplate(root),
      targetDir: out,
      names: deriveNames("pay-service"),
      choices: { ...defaults, auth: "both", adminPort: 9095, unixSocket: true, sse: false },
      secret: () => "SECRET",
    });
  });

  it("names every Kubernetes object and label after the package", () => {
    assert.deepEqual(leftoverExampleTokens(path.join(out, "deploy")), []);
    const deployment = one(file("deploy/k8s/deployment.yaml"), "Deployment");
    assert.equal(deployment.metadata.name, "pay-service");
    assert.deepEqual(deployment.spec.selector.matchLabels, { "app.kubernetes.io/name": "pay-service" });
    assert.equal(container(deployment).image, "pay-service");
    const names = objects(file("deploy/k8s/service.yaml")).map((o) => o.metadata.name);
    assert.deepEqual(names, ["pay-service", "pay-service-grpc"]);
    const kustomization = parseAllDocuments(file("deploy/k8s/kustomization.yaml"))[0]?.toJS();
    assert.equal(kustomization.images[0].name, "pay-service");
    assert.equal(kustomization.configMapGenerator[0].name, "pay-service");
  });

  it("carries the choices into the Dockerfile, the ConfigMap and the manifests", () => {
    assert.match(file("Dockerfile"), /^EXPOSE 9090 9091 9095$/m);
    const config = parseEnv(file("deploy/k8s/config.env"));
    for (const [k, v] of [
      ["ADMIN_PORT", "9095"],
      ["HTTP_HEADER_PREFIXES", "x-api-key"],
      ["DISABLE_UNIX_GATEWAY", "false"],
      ["DISABLE_SSE_MARSHALER", "true"],
    ]) {
      assert.equal(config.get(k as string), v, k);
    }
    assert.ok(!file("deploy/k8s/config.env").includes("SECRET"), "no secret value in the ConfigMap");
    const deployment = one(file("deploy/k8s/deployment.yaml"), "Deployment");
    assert.deepEqual(secretRefs(deployment), { JWT_SECRET: false, API_KEYS: false });
    assert.equal(container(deployment).env.find((e: { name: string }) => e.name === "JWT_SECRET").valueFrom.secretKeyRef.name, "pay-service-auth");
    assert.equal(one(file("deploy/k8s/servicemonitor.yaml"), "ServiceMonitor").spec.endpoints[0].port, "admin");
  });

  it("keeps Grafana's {{label}} legends and names the dashboard after the package", () => {
    const dash = JSON.parse(file("deploy/grafana/dashboard.json"));
    assert.equal(dash.title, "pay-service");
    const job = dash.templating.list.find((v: { name: string }) => v.name === "job");
    assert.equal(job.current.value, "pay-service", "the job label is the Service's name");
    assert.ok(file("deploy/grafana/dashboard.json").includes('"{{grpc_method}}"'));
  });
});
