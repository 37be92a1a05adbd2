// deploy/k8s/ as `kubectl apply -k deploy/k8s` sends it, validated against the Kubernetes OpenAPI schemas
// (kubernetes-models; the ServiceMonitor against the Prometheus Operator's CRD schema). Framework tooling
// (framework-dev.json): it keeps the template's manifests valid where the framework is developed, and leaves
// 26 MB of schema packages out of generated repos, whose deploy-k8s.test.ts checks the manifests against the
// service's settings.
import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { ServiceMonitor } from "@kubernetes-models/prometheus-operator/monitoring.coreos.com/v1";
import { Deployment } from "kubernetes-models/apps/v1";
import { HorizontalPodAutoscaler } from "kubernetes-models/autoscaling/v2";
import { PodDisruptionBudget } from "kubernetes-models/policy/v1";
import { ConfigMap, Service } from "kubernetes-models/v1";
import { type Any, APP, buildManifests } from "./deploy-files.js";

/** The models whose `validate()` checks an object against its published schema, by apiVersion and kind. */
const MODELS: Record<string, new (data: Any) => { validate(): void }> = {
  "apps/v1/Deployment": Deployment,
  "v1/Service": Service,
  "v1/ConfigMap": ConfigMap,
  "autoscaling/v2/HorizontalPodAutoscaler": HorizontalPodAutoscaler,
  "policy/v1/PodDisruptionBudget": PodDisruptionBudget,
  "monitoring.coreos.com/v1/ServiceMonitor": ServiceMonitor,
};

const objects = buildManifests();
const only = (kind: string): Any => {
  const found = objects.filter((o) => o.kind === kind && o.metadata.name === APP);
  assert.equal(found.length, 1, `one ${kind} ${APP}`);
  return found[0];
};
const deployment = only("Deployment");
const monitor = only("ServiceMonitor");

describe("deploy/k8s: every object is valid against its schema", () => {
  for (const o of objects) {
    test(`${o.kind} ${o.metadata.name}`, () => {
      const Model = MODELS[`${o.apiVersion}/${o.kind}`];
      assert.ok(Model, `a schema for ${o.apiVersion} ${o.kind}`);
      assert.doesNotThrow(() => new Model(o).validate());
    });
  }

  test("the schemas catch mistakes (a string port, a missing selector)", () => {
    const broken = structuredClone(deployment);
    broken.spec.template.spec.containers[0].ports[0].containerPort = "9090";
    assert.throws(() => new Deployment(broken).validate(), /containerPort must be integer/);
    const noSelector = structuredClone(deployment);
    delete noSelector.spec.selector;
    assert.throws(() => new Deployment(noSelector).validate(), /selector/);
    assert.throws(
      () => new ServiceMonitor({ ...monitor, spec: { ...monitor.spec, endpoints: [{ port: "http", interval: "15 seconds" }] } }).validate(),
      /interval/,
    );
  });
});
