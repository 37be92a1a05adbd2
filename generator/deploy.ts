// The scaffolder's choices shape the Dockerfile and the Kubernetes manifests under deploy/k8s/, the way they
// shape .env: the template's files are the defaults (no admin port, no auth), edited here in place.
import fs from "node:fs";
import path from "node:path";
import { isMap, isSeq, parseAllDocuments, type Document, type YAMLMap } from "yaml";
import { applyEnvVars, type Choices, publicVars } from "./env-file.js";

/** The secrets each auth mode needs, as the Deployment's env names (and the Secret's keys). */
export function requiredSecrets(c: Choices): string[] {
  return [
    ...(c.auth === "jwt" || c.auth === "both" ? ["JWT_SECRET"] : []),
    ...(c.auth === "api-key" || c.auth === "both" ? ["API_KEYS"] : []),
  ];
}

/** `EXPOSE 9090 9091` gains the admin port. */
export function shapeDockerfile(text: string, c: Choices): string {
  if (c.adminPort === undefined) return text;
  const port = String(c.adminPort);
  return text.replace(/^(EXPOSE[ \t]+[^\r\n]*?)[ \t]*$/m, (line, head: string) =>
    line.split(/[ \t]+/).includes(port) ? line : `${head} ${port}`,
  );
}

/** deploy/k8s/config.env (the ConfigMap's content) gets the same non-secret settings as .env.example. */
export function shapeConfigEnv(text: string, c: Choices): string {
  return applyEnvVars(text, publicVars(c));
}

// The template's style: `["sleep", "5"]`, not `[ "sleep", "5" ]`; long comment lines stay as written.
const STRINGIFY = { flowCollectionPadding: false, lineWidth: 0 } as const;

type Obj = YAMLMap<unknown, unknown>;
const maps = (v: unknown): Obj[] => (isSeq(v) ? v.items.filter(isMap) : []) as Obj[];
const kindOf = (doc: Document) => doc.get("kind");

function shapeDeployment(doc: Document, c: Choices): void {
  const secrets = new Set(requiredSecrets(c));
  for (const container of maps(doc.getIn(["spec", "template", "spec", "containers"]))) {
    const ports = container.get("ports");
    if (c.adminPort !== undefined && isSeq(ports) && maps(ports).some((p) => p.get("name") === "http")) {
      if (!maps(ports).some((p) => p.get("name") === "admin")) {
        ports.add(doc.createNode({ name: "admin", containerPort: c.adminPort }));
      }
    }
    // With auth chosen, a missing Secret must stop the pod from starting (fail closed), not run it open.
    for (const env of maps(container.get("env"))) {
      const ref = env.getIn(["valueFrom", "secretKeyRef"]);
      if (isMap(ref) && secrets.has(String(ref.get("key")))) ref.set("optional", false);
    }
  }
}

function shapeService(doc: Document, c: Choices): void {
  if (c.adminPort === undefined) return;
  const ports = doc.getIn(["spec", "ports"]);
  // Only the Service that carries HTTP (the headless gRPC one stays as it is).
  if (!isSeq(ports) || !maps(ports).some((p) => p.get("name") === "http")) return;
  if (maps(ports).some((p) => p.get("name") === "admin")) return;
  ports.add(doc.createNode({ name: "admin", port: c.adminPort, targetPort: "admin", appProtocol: "http" }));
}

function shapeServiceMonitor(doc: Document, c: Choices): void {
  if (c.adminPort === undefined) return;
  // With ADMIN_PORT, /metrics is served there (and the HTTP port answers 404 for it).
  for (const ep of maps(doc.getIn(["spec", "endpoints"]))) {
    if (ep.get("port") === "http" && ep.get("path") === "/metrics") ep.set("port", "admin");
  }
}

/** Edits the Kubernetes objects of one YAML file (any number of documents) by kind; other kinds are left as they are. */
export function shapeManifest(text: string, c: Choices): string {
  const docs = parseAllDocuments(text);
  if (!Array.isArray(docs)) return text; // an empty file
  let changed = false;
  for (const doc of docs) {
    if (doc.errors.length > 0) return text; // not ours to fix
    const before = doc.toString(STRINGIFY);
    const kind = kindOf(doc);
    if (kind === "Deployment") shapeDeployment(doc, c);
    else if (kind === "Service") shapeService(doc, c);
    else if (kind === "ServiceMonitor") shapeServiceMonitor(doc, c);
    if (doc.toString(STRINGIFY) !== before) changed = true;
  }
  if (!changed) return text;
  // A document that followed a `---` keeps it (yaml's docStart); one that did not gets one.
  return docs
    .map((d, i) => {
      const s = d.toString(STRINGIFY);
      return i === 0 || s.startsWith("---") ? s : `---\n${s}`;
    })
    .join("");
}

/** Applies the choices to the generated repository's Dockerfile and deploy/k8s/; returns the files changed. */
export function shapeDeployFiles(targetDir: string, c: Choices): string[] {
  const changed: string[] = [];
  const edit = (rel: string, fn: (text: string) => string) => {
    const file = path.join(targetDir, rel);
    if (!fs.existsSync(file)) return;
    const text = fs.readFileSync(file, "utf8");
    const next = fn(text);
    if (next !== text) {
      fs.writeFileSync(file, next);
      changed.push(rel);
    }
  };
  edit("Dockerfile", (t) => shapeDockerfile(t, c));
  edit("deploy/k8s/config.env", (t) => shapeConfigEnv(t, c));
  const k8s = path.join(targetDir, "deploy/k8s");
  if (fs.existsSync(k8s)) {
    for (const name of fs.readdirSync(k8s).sort()) {
      if (/\.ya?ml$/.test(name)) edit(`deploy/k8s/${name}`, (t) => shapeManifest(t, c));
    }
  }
  return changed;
}
