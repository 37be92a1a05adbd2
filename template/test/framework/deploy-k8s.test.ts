// deploy/k8s/ as `kubectl apply -k deploy/k8s` sends it: the numbers that must agree with the service agree with
// its settings (src/framework/config/schema.ts, overridden by the ConfigMap): ports, probe paths, and the
// shutdown timeline against the grace period. Written for any generated service: names come from package.json,
// the admin port from the ConfigMap. The objects' validity against the Kubernetes schemas is checked where the
// framework is developed (deploy-k8s-schema.test.ts, framework-dev.json: 26 MB of schema packages).
import assert from "node:assert/strict";
import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, test } from "node:test";
import { loadConfig } from "../../src/framework/config/load.js";
import { settings } from "../../src/framework/config/schema.js";
import { type Any, APP, buildManifests, K8S_DIR, ROOT, kustomization as readKustomization } from "./deploy-files.js";

const read = (rel: string) => readFileSync(join(ROOT, rel), "utf8");

const KUSTOMIZATION_FIELDS = new Set(["apiVersion", "kind", "resources", "configMapGenerator", "images", "namespace", "labels"]);
const kustomization = readKustomization();

const objects = buildManifests();
const only = (kind: string, name = APP): Any => {
  const found = objects.filter((o) => o.kind === kind && o.metadata.name === name);
  assert.equal(found.length, 1, `one ${kind} ${name}`);
  return found[0];
};
const deployment = only("Deployment");
const pod = deployment.spec.template.spec;
const container = pod.containers[0];
const configMap = only("ConfigMap");
// The service's effective settings on the cluster: its defaults, overridden by the ConfigMap (secrets aside).
const config = loadConfig(configMap.data);
const services = objects.filter((o) => o.kind === "Service");
const mainService = only("Service");
const monitor = only("ServiceMonitor");

const containerPort = (name: string): number | undefined => container.ports.find((p: Any) => p.name === name)?.containerPort;
const matches = (selector: Record<string, string>, labels: Record<string, string> = {}) =>
  Object.entries(selector).every(([k, v]) => labels[k] === v);

describe("deploy/k8s: kustomization", () => {
  test("lists every manifest in the directory, and only known fields", () => {
    assert.equal(kustomization.apiVersion, "kustomize.config.k8s.io/v1beta1");
    assert.equal(kustomization.kind, "Kustomization");
    for (const key of Object.keys(kustomization)) assert.ok(KUSTOMIZATION_FIELDS.has(key), `kustomization field ${key}`);
    const manifests = readdirSync(K8S_DIR).filter((f) => /\.ya?ml$/.test(f) && f !== "kustomization.yaml");
    assert.deepEqual([...kustomization.resources].sort(), manifests.sort());
  });

  test("the image is the one `make docker` tags: the package name", () => {
    assert.equal(container.image.split(":")[0], APP);
    assert.match(container.image, /^[^:]+:[\w][\w.-]{0,127}$/, "a tag is set");
  });
});

describe("deploy/k8s: names and labels", () => {
  for (const o of objects) {
    test(`${o.kind} ${o.metadata.name}`, () => {
      // Names become DNS labels (Services) and label values: at most 63 characters.
      assert.match(o.metadata.name, /^[a-z]([-a-z0-9]{0,61}[a-z0-9])?$/, "a DNS-1035 label");
      assert.equal(o.metadata.labels?.["app.kubernetes.io/name"], APP, "labelled with the app name");
    });
  }
});

describe("deploy/k8s: the manifests agree with the service", () => {
  test("the ConfigMap holds known, valid, non-secret settings", () => {
    for (const key of Object.keys(configMap.data)) {
      assert.ok(key in settings, `${key} is a setting of the service`);
      assert.ok(!(settings as Any)[key].secret, `${key} is a secret: it belongs in the Secret`);
    }
    assert.doesNotThrow(() => loadConfig(configMap.data), "the service accepts the ConfigMap");
  });

  test("container ports are the service's ports, and the image exposes them", () => {
    assert.equal(containerPort("grpc"), config.GRPC_PORT);
    assert.equal(containerPort("http"), config.HTTP_PORT);
    assert.equal(containerPort("admin"), config.ADMIN_PORT, "an admin port exactly when ADMIN_PORT is set");
    const exposed = read("Dockerfile")
      .split("\n")
      .filter((l) => l.startsWith("EXPOSE "))
      .flatMap((l) => l.split(/\s+/).slice(1).map(Number));
    assert.deepEqual(exposed.sort(), container.ports.map((p: Any) => p.containerPort).sort());
  });

  test("probes: startup and liveness on /healthcheck, readiness on /readycheck, on the HTTP port", () => {
    for (const [probe, path] of [
      ["startupProbe", "/healthcheck"],
      ["livenessProbe", "/healthcheck"],
      ["readinessProbe", "/readycheck"],
    ]) {
      const p = container[probe as string];
      assert.ok(p, `${probe} is set`);
      assert.equal(p.httpGet.path, path, probe);
      assert.equal(containerPort(p.httpGet.port), config.HTTP_PORT, `${probe} targets the HTTP port`);
    }
  });

  test("the shutdown timeline fits the grace period", () => {
    const seconds = (p: Any) => (p.periodSeconds ?? 10) * (p.failureThreshold ?? 3);
    const preStop: string[] = container.lifecycle.preStop.exec.command;
    assert.equal(preStop[0], "sleep");
    const sleep = Number(preStop[1]);
    assert.ok(sleep >= 2 && sleep <= 10, `preStop sleeps a few seconds for endpoints to drain (${sleep})`);
    const grace = pod.terminationGracePeriodSeconds;
    assert.ok(config.GRPC_GRACEFUL_DURATION_IN_SECONDS < config.SHUTDOWN_DURATION_IN_SECONDS);
    // The grace period starts with preStop; SIGTERM comes after it, and the service exits within its budget.
    assert.ok(
      grace > sleep + config.SHUTDOWN_DURATION_IN_SECONDS,
      `terminationGracePeriodSeconds ${grace} > preStop ${sleep} + SHUTDOWN_DURATION_IN_SECONDS ${config.SHUTDOWN_DURATION_IN_SECONDS}`,
    );
    assert.ok(
      seconds(container.readinessProbe) <= config.GRPC_GRACEFUL_DURATION_IN_SECONDS,
      "failing readiness is noticed within the drain wait",
    );
    assert.ok(
      seconds(container.livenessProbe) > config.SHUTDOWN_DURATION_IN_SECONDS,
      "liveness never restarts a pod that is shutting down",
    );
    assert.ok(seconds(container.startupProbe) >= 10, "start-up has time");
  });

  test("Services: gRPC with appProtocol grpc, HTTP, admin when set; a headless one for client-side balancing", () => {
    const ports = Object.fromEntries(mainService.spec.ports.map((p: Any) => [p.name, p]));
    assert.equal(ports.grpc.appProtocol, "grpc");
    assert.equal(containerPort(ports.grpc.targetPort), config.GRPC_PORT);
    assert.equal(containerPort(ports.http.targetPort), config.HTTP_PORT);
    assert.equal(ports.admin && containerPort(ports.admin.targetPort), config.ADMIN_PORT);
    const headless = services.filter((s) => s.spec.clusterIP === "None");
    assert.equal(headless.length, 1);
    assert.deepEqual(
      headless[0]?.spec.ports.map((p: Any) => [p.name, p.appProtocol]),
      [["grpc", "grpc"]],
    );
    for (const s of services) {
      assert.ok(matches(s.spec.selector, deployment.spec.template.metadata.labels), `${s.metadata.name} selects the pods`);
      for (const p of s.spec.ports) assert.ok(containerPort(p.targetPort), `${s.metadata.name} ${p.name} targets a named container port`);
    }
  });

  test("the ServiceMonitor scrapes /metrics on the port that serves it, once per pod", () => {
    const metricsPort = config.ADMIN_PORT === undefined ? "http" : "admin";
    assert.deepEqual(
      monitor.spec.endpoints.map((e: Any) => [e.port, e.path]),
      [[metricsPort, "/metrics"]],
    );
    const selected = services.filter((s) => matches(monitor.spec.selector.matchLabels, s.metadata.labels));
    const withPort = selected.filter((s) => s.spec.ports.some((p: Any) => p.name === metricsPort));
    assert.deepEqual(
      withPort.map((s) => s.metadata.name),
      [APP],
      "exactly one selected Service has the scrape port",
    );
  });

  test("selectors: the Deployment's, the PDB's and the HPA's target match the pods", () => {
    const labels = deployment.spec.template.metadata.labels;
    assert.ok(matches(deployment.spec.selector.matchLabels, labels));
    const pdb = only("PodDisruptionBudget");
    assert.ok(matches(pdb.spec.selector.matchLabels, labels));
    const hpa = only("HorizontalPodAutoscaler");
    assert.deepEqual(hpa.spec.scaleTargetRef, { apiVersion: "apps/v1", kind: "Deployment", name: APP });
    assert.ok(hpa.spec.minReplicas >= 2, "two pods at least, so one can be drained");
    assert.ok(pdb.spec.maxUnavailable < hpa.spec.minReplicas, "a drain never takes every pod");
    assert.deepEqual(
      hpa.spec.metrics.map((m: Any) => [m.type, m.resource?.name, m.resource?.target.type]),
      [["Resource", "cpu", "Utilization"]],
    );
    assert.ok(container.resources.requests.cpu, "CPU utilisation is relative to the request");
    assert.equal(deployment.spec.replicas, undefined, "the HPA owns the replica count");
  });

  test("the pod runs as the image's non-root user on a read-only root filesystem, with a writable /tmp", () => {
    const user = /^USER\s+(\d+)(?::(\d+))?\s*$/m.exec(read("Dockerfile"));
    assert.ok(user, "the Dockerfile's USER is numeric");
    assert.equal(pod.securityContext.runAsNonRoot, true);
    assert.equal(pod.securityContext.runAsUser, Number(user[1]));
    assert.notEqual(pod.securityContext.runAsUser, 0);
    assert.equal(container.securityContext.readOnlyRootFilesystem, true);
    assert.equal(container.securityContext.allowPrivilegeEscalation, false);
    const tmp = container.volumeMounts.find((m: Any) => m.mountPath === "/tmp");
    assert.ok(tmp, "/tmp is mounted");
    assert.ok(pod.volumes.find((v: Any) => v.name === tmp.name)?.emptyDir, "/tmp is an emptyDir");
    assert.equal(pod.enableServiceLinks, false, "no <SERVICE>_PORT variables that could clash with GRPC_PORT/HTTP_PORT");
    for (const kind of ["cpu", "memory"]) {
      assert.ok(container.resources.requests[kind] && container.resources.limits[kind], `${kind} request and limit`);
    }
  });

  test("settings come from the ConfigMap, JWT_SECRET and API_KEYS from one Secret", () => {
    assert.deepEqual(container.envFrom, [{ configMapRef: { name: APP } }]);
    const refs = container.env.filter((e: Any) => e.valueFrom?.secretKeyRef).map((e: Any) => [e.name, e.valueFrom.secretKeyRef]);
    assert.deepEqual(
      refs.map(([name, ref]: Any) => [name, ref.name, ref.key]),
      [
        ["JWT_SECRET", `${APP}-auth`, "JWT_SECRET"],
        ["API_KEYS", `${APP}-auth`, "API_KEYS"],
      ],
    );
    for (const e of container.env) {
      if (e.name in settings) assert.ok(e.valueFrom?.secretKeyRef, `${e.name} is a secret reference, not a value`);
    }
  });
});
