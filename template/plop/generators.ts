// The repository's generators (`npx plop`, or the Makefile's new-* targets): a service, an RPC of any kind,
// an interceptor, a worker. Each one plans every change in memory and checks every input first, so a bad
// name or a missing service writes nothing; then it writes the files, formats the TypeScript it touched
// with oxfmt and regenerates src/gen/.
import { execFileSync } from "node:child_process";
import fs from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";
import type { FileDescriptorProto } from "@bufbuild/protobuf/wkt";
import type { NodePlopAPI } from "node-plop";
import {
  type HttpRule,
  KINDS,
  parseHttp,
  partNameProblem,
  partNames,
  type RpcKind,
  type RpcNames,
  rpcNameProblem,
  rpcNames,
  type ServiceNames,
  serviceNameProblem,
  serviceNames,
} from "./names.js";
import { buildProtos, findService, forgetProtos, GeneratorError, httpRoutes, insertRpc, messageNames, routeShape } from "./proto-file.js";
import { functionOf, prependCall, property, Source } from "./source-edit.js";

const TEMPLATES = path.join(path.dirname(fileURLToPath(import.meta.url)), "templates");
const MAIN = "src/main.ts";
const FRAMEWORK_INDEX = "src/framework/index.ts";

/** One file the generator writes: created (must not exist) or replaced (read before planning). */
export interface Change {
  path: string;
  text: string;
  create: boolean;
}

type Render = (template: string, data: object) => string;

export interface Repo {
  root: string;
  render: Render;
}

const read = (repo: Repo, rel: string) => fs.readFileSync(path.join(repo.root, rel), "utf8");
const exists = (repo: Repo, rel: string) => fs.existsSync(path.join(repo.root, rel));
const template = (repo: Repo, name: string, data: object) => repo.render(fs.readFileSync(path.join(TEMPLATES, name), "utf8"), data);

/** `import` path of `to` (a repo-relative .ts file) from the file `from`: `../framework/index.js`. */
function importPath(from: string, to: string): string {
  const rel = path.posix.relative(path.posix.dirname(from), to.replace(/\.ts$/, ".js"));
  return rel.startsWith(".") ? rel : `./${rel}`;
}

// --- new-service ---

export function serviceProblem(repo: Repo, name: string): string | undefined {
  const problem = serviceNameProblem(name);
  if (problem) return problem;
  const svc = serviceNames(name);
  for (const f of [svc.protoPath, svc.sourcePath, svc.testPath]) if (exists(repo, f)) return `service ${svc.kebab} exists already: ${f}`;
  return undefined;
}

export function planService(repo: Repo, name: string): Change[] {
  const problem = serviceProblem(repo, name);
  if (problem) throw new GeneratorError(problem);
  const svc = serviceNames(name);
  const main = new Source(MAIN, read(repo, MAIN));
  if (main.importedNames().has(svc.exportName)) throw new GeneratorError(`${MAIN} imports a ${svc.exportName} already`);
  if (buildProtos(repo.root).some((f) => f.package === svc.protoPackage))
    throw new GeneratorError(`proto package ${svc.protoPackage} exists already`);
  main.appendElement(main.runList(), svc.exportName);
  main.addImport([svc.exportName], importPath(MAIN, svc.sourcePath));
  return [
    { path: svc.protoPath, text: template(repo, "service.proto.hbs", { svc }), create: true },
    { path: svc.sourcePath, text: template(repo, "service.ts.hbs", { svc }), create: true },
    { path: svc.testPath, text: template(repo, "service.test.ts.hbs", { svc }), create: true },
    { path: MAIN, text: main.result(), create: false },
  ];
}

// --- new-rpc ---

export interface RpcAnswers {
  service: string;
  name: string;
  kind: string;
  /** `verb:/path`, `none`, or empty for the default `post:/api/v1/<service>/<rpc>`. */
  http?: string;
}

export function rpcServiceProblem(repo: Repo, service: string): string | undefined {
  const problem = serviceNameProblem(service, "SERVICE");
  if (problem) return problem;
  const svc = serviceNames(service);
  if (!exists(repo, svc.protoPath))
    return `no service ${service}: ${svc.protoPath} does not exist (make new-service NAME=${service} creates one)`;
  if (!exists(repo, svc.sourcePath)) return `no handlers for service ${service}: ${svc.sourcePath} does not exist`;
  return undefined;
}

/** An RPC, its messages or its test that exist already (asked early, so the prompt can say so). */
export function rpcTakenProblem(repo: Repo, service: string, name: string): string | undefined {
  if (rpcServiceProblem(repo, service)) return undefined; // reported by the service prompt
  return takenProblem(repo, buildProtos(repo.root), serviceNames(service), rpcNames(name));
}

function takenProblem(repo: Repo, files: FileDescriptorProto[], svc: ServiceNames, rpc: RpcNames): string | undefined {
  // The RPC first: running the same make new-rpc twice should say that, not name the test file it wrote.
  const at = findService(files, svc.protoFile, svc.service);
  if (at?.service.method.some((m) => m.name === rpc.name)) return `${svc.service} has an RPC ${rpc.name} already`;
  const taken = messageNames(files, svc.protoPackage);
  for (const m of [rpc.request, rpc.response]) if (taken.has(m)) return `package ${svc.protoPackage} has a message ${m} already`;
  const testPath = rpcTestPath(svc, rpc);
  if (exists(repo, testPath)) return `${testPath} exists already`;
  return undefined;
}

/** A route another method has already (the service would stop at start-up with "two routes for …"). */
function routeTakenProblem(files: FileDescriptorProto[], http: HttpRule): string | undefined {
  const wanted = routeShape(`${http.verb.toUpperCase()} ${http.path}`);
  for (const [route, method] of httpRoutes(files)) {
    if (routeShape(route) === wanted) return `${route} is already the route of ${method}: give HTTP=verb:/path another path, or HTTP=none`;
  }
  return undefined;
}

const rpcTestPath = (svc: ServiceNames, rpc: RpcNames) => `test/${svc.kebab}-${rpc.kebab}.test.ts`;

export function kindProblem(kind: string): string | undefined {
  if (kind === "") return `KIND is required: ${KINDS.join(", ")}`;
  if (!(KINDS as readonly string[]).includes(kind)) return `invalid KIND "${kind}": use ${KINDS.join(", ")}`;
  return undefined;
}

export function defaultHttp(service: string, name: string): string {
  return `post:/api/v1/${serviceNames(service).kebab}/${rpcNames(name).kebab}`;
}

export function httpProblem(spec: string, kind: string): string | undefined {
  const rule = spec === "" ? undefined : parseHttp(spec, kind as RpcKind);
  return typeof rule === "string" ? rule : undefined;
}

const snakeToCamel = (s: string) => s.replace(/_([a-z0-9])/g, (_, c: string) => c.toUpperCase());

export function planRpc(repo: Repo, answers: RpcAnswers): Change[] {
  const problem =
    rpcServiceProblem(repo, answers.service) ??
    rpcNameProblem(answers.name) ??
    kindProblem(answers.kind) ??
    httpProblem(answers.http ?? "", answers.kind);
  if (problem) throw new GeneratorError(problem);
  const svc = serviceNames(answers.service);
  const rpc = rpcNames(answers.name);
  const kind = answers.kind as RpcKind;
  const http = parseHttp(answers.http || defaultHttp(answers.service, answers.name), kind) as HttpRule | undefined;
  const testPath = rpcTestPath(svc, rpc);
  const files = buildProtos(repo.root);
  const at = findService(files, svc.protoFile, svc.service);
  if (!at) throw new GeneratorError(`${svc.protoPath} has no service ${svc.service}`);
  const taken = takenProblem(repo, files, svc, rpc) ?? (http ? routeTakenProblem(files, http) : undefined);
  if (taken) throw new GeneratorError(taken);

  const source = new Source(svc.sourcePath, read(repo, svc.sourcePath));
  const handlers = property(source.serviceOptions(), "handlers");
  if (handlers?.type !== "ObjectProperty" || handlers.value.type !== "ObjectExpression") {
    throw new GeneratorError(`${svc.sourcePath}: defineService's handlers must be an object literal ({ ... }) to add ${rpc.local} to it`);
  }
  if (property(handlers.value, rpc.local)) throw new GeneratorError(`${svc.sourcePath} has a ${rpc.local} handler already`);

  const data = {
    svc,
    rpc,
    kind,
    http,
    clientStreams: kind === "client-stream" || kind === "bidi",
    serverStreams: kind === "server-stream" || kind === "bidi",
    fields: (http?.variables ?? []).map((name, i) => ({ name, number: i + 1 })),
    serviceModule: svc.sourcePath.replace(/\.ts$/, ".js"),
    ...httpCall(http),
  };
  const imports = ["google/api/annotations.proto", ...(data.fields.length > 0 ? ["buf/validate/validate.proto"] : [])];
  const proto = insertRpc(
    read(repo, svc.protoPath),
    at,
    template(repo, "rpc.proto.hbs", data).replace(/\n$/, ""),
    template(repo, "rpc-messages.proto.hbs", data),
    http ? imports : [],
  );
  source.appendProperty(handlers.value, template(repo, "handler.ts.hbs", data));
  source.ensureImported(["Code", "GrpcError"], importPath(svc.sourcePath, FRAMEWORK_INDEX));
  return [
    { path: svc.protoPath, text: proto, create: false },
    { path: svc.sourcePath, text: source.result(), create: false },
    { path: testPath, text: template(repo, "rpc.test.ts.hbs", data), create: true },
  ];
}

/** The test's request (path variables filled with "x") and its HTTP call. */
function httpCall(http: HttpRule | undefined): { request: string; urlPath: string; fetchInit: string } {
  const vars = http?.variables ?? [];
  const request = vars.length > 0 ? `{ ${vars.map((v) => `${snakeToCamel(v)}: "x"`).join(", ")} }` : "{}";
  if (!http) return { request, urlPath: "", fetchInit: "" };
  const urlPath = http.path.replace(/\{[a-z0-9_]+\}/g, "x");
  const fetchInit = http.body
    ? `{ method: "${http.verb.toUpperCase()}", headers: { "content-type": "application/json" }, body: "{}" }`
    : `{ method: "${http.verb.toUpperCase()}" }`;
  return { request, urlPath, fetchInit };
}

// --- new-interceptor, new-worker ---

/** The service file an interceptor or worker is registered in: SERVICE's, or the first one `run([...])` lists. */
function targetService(repo: Repo, service: string): { file: string; exportName: string } {
  if (service !== "") {
    const problem = partServiceProblem(repo, service);
    if (problem) throw new GeneratorError(problem);
    const svc = serviceNames(service);
    return { file: svc.sourcePath, exportName: svc.exportName };
  }
  const main = new Source(MAIN, read(repo, MAIN));
  const first = main.runList().elements[0];
  if (first?.type !== "Identifier") throw new GeneratorError(`${MAIN}: run([...]) lists no service; pass SERVICE=<name>`);
  const from = main.importSource(first.name);
  if (!from?.startsWith(".")) throw new GeneratorError(`${MAIN}: cannot tell which file ${first.name} comes from; pass SERVICE=<name>`);
  const file = path.posix.join(path.posix.dirname(MAIN), from).replace(/\.js$/, ".ts");
  if (!exists(repo, file)) throw new GeneratorError(`${file} (imported by ${MAIN}) does not exist; pass SERVICE=<name>`);
  return { file, exportName: first.name };
}

/** SERVICE of new-interceptor / new-worker: empty (the first one src/main.ts runs) or a service with handlers. */
export function partServiceProblem(repo: Repo, service: string): string | undefined {
  if (service === "") return undefined;
  const problem = serviceNameProblem(service, "SERVICE");
  if (problem) return problem;
  const { sourcePath } = serviceNames(service);
  return exists(repo, sourcePath) ? undefined : `no service ${service}: ${sourcePath} does not exist`;
}

export interface PartAnswers {
  name: string;
  /** Kebab name of the service to register it in; empty for the first one in src/main.ts. */
  service?: string;
}

export function partProblem(repo: Repo, name: string, kind: "interceptor" | "worker"): string | undefined {
  const problem = partNameProblem(name);
  if (problem) return problem;
  const part = partNames(name, kind);
  for (const f of [part.sourcePath, part.testPath]) if (exists(repo, f)) return `${kind} ${name} exists already: ${f}`;
  return undefined;
}

export function planPart(repo: Repo, answers: PartAnswers, kind: "interceptor" | "worker"): Change[] {
  const problem = partProblem(repo, answers.name, kind);
  if (problem) throw new GeneratorError(problem);
  const part = partNames(answers.name, kind);
  const target = targetService(repo, answers.service ?? "");
  const source = new Source(target.file, read(repo, target.file));
  if (source.importedNames().has(part.exportName)) throw new GeneratorError(`${target.file} imports a ${part.exportName} already`);
  const options = source.serviceOptions();

  if (kind === "interceptor") {
    const hook = property(options, "preStart");
    if (!hook) {
      source.appendProperty(options, `preStart(app) {\napp.prepend(${part.exportName});\n}`);
    } else {
      const fn = functionOf(hook);
      if (!fn?.param)
        throw new GeneratorError(`${target.file}: preStart must be a function with an app parameter, e.g. preStart(app) { ... }`);
      const call = prependCall(fn.body);
      // First argument = outermost: the new interceptor runs before the ones already there.
      if (call?.arguments[0]) source.insert(call.arguments[0].start!, `${part.exportName}, `);
      else source.insert(fn.body.start! + 1, `\n${fn.param}.prepend(${part.exportName});`);
    }
  } else {
    const workers = property(options, "workers");
    if (!workers) source.appendProperty(options, `workers: [${part.exportName}]`);
    else if (workers.type === "ObjectProperty" && workers.value.type === "ArrayExpression")
      source.appendElement(workers.value, part.exportName);
    else throw new GeneratorError(`${target.file}: workers must be an array literal ([ ... ]) to add ${part.exportName} to it`);
  }
  source.addImport([part.exportName], importPath(target.file, part.sourcePath));

  const data = {
    part,
    target: target.exportName,
    svc: { exportName: target.exportName },
    serviceModule: target.file.replace(/\.ts$/, ".js"),
  };
  return [
    { path: part.sourcePath, text: template(repo, `${kind}.ts.hbs`, data), create: true },
    { path: part.testPath, text: template(repo, `${kind}.test.ts.hbs`, data), create: true },
    { path: target.file, text: source.result(), create: false },
  ];
}

// --- writing ---

/** Writes the planned files, formats the TypeScript among them and regenerates src/gen/ when a proto changed. */
export function apply(root: string, changes: Change[], options: { generate: boolean }): string {
  // A second check right before writing: nothing is written if any file to create has appeared meanwhile.
  for (const c of changes) if (c.create && fs.existsSync(path.join(root, c.path))) throw new GeneratorError(`${c.path} exists already`);
  forgetProtos();
  for (const c of changes) {
    fs.mkdirSync(path.dirname(path.join(root, c.path)), { recursive: true });
    fs.writeFileSync(path.join(root, c.path), c.text, c.create ? { flag: "wx" } : {});
  }
  const ts = changes.filter((c) => c.path.endsWith(".ts")).map((c) => c.path);
  if (ts.length > 0) run(root, "node_modules/.bin/oxfmt", ts, "formatting with oxfmt");
  if (options.generate && changes.some((c) => c.path.endsWith(".proto")))
    run(root, "make", ["--no-print-directory", "generate"], "make generate");
  return changes.map((c) => c.path).join(", ");
}

function run(root: string, cmd: string, args: string[], what: string): void {
  try {
    execFileSync(cmd.includes("/") ? path.join(root, cmd) : cmd, args, { cwd: root, stdio: ["ignore", "pipe", "pipe"] });
  } catch (err) {
    const e = err as { stdout?: Buffer; stderr?: Buffer };
    const out = `${e.stdout ?? ""}${e.stderr ?? ""}`.trim() || String(err);
    throw new GeneratorError(`the files are written, but ${what} failed: ${out.split("\n").slice(-5).join(" | ")}`);
  }
}

// --- plop ---

const check = (problem: string | undefined) => problem ?? true;
// The Makefile passes every option, empty ones included: an unchecked value goes straight to validate.
const raw = (v: string) => v;

export default function generators(plop: NodePlopAPI): void {
  const repo: Repo = { root: plop.getDestBasePath(), render: (t, data) => plop.renderString(t, data) };
  const generate = process.env.PLOP_NO_GENERATE !== "1";
  const action = (plan: (answers: Record<string, string>) => Change[]) => (answers: object) =>
    apply(repo.root, plan(answers as Record<string, string>), { generate });

  plop.setActionType(
    "newService",
    action((a) => planService(repo, a.name ?? "")),
  );
  plop.setActionType(
    "newRpc",
    action((a) => planRpc(repo, a as unknown as RpcAnswers)),
  );
  plop.setActionType(
    "newInterceptor",
    action((a) => planPart(repo, { name: a.name ?? "", service: a.service ?? "" }, "interceptor")),
  );
  plop.setActionType(
    "newWorker",
    action((a) => planPart(repo, { name: a.name ?? "", service: a.service ?? "" }, "worker")),
  );

  plop.setGenerator("service", {
    description: "a service: its proto, handlers, a test, registered in src/main.ts",
    prompts: [
      {
        type: "input",
        name: "name",
        message: "Service name (kebab case, e.g. billing):",
        validate: (v: string) => check(serviceProblem(repo, v)),
      },
    ],
    actions: [{ type: "newService" }],
  });

  // node-plop's `bypass` (not in inquirer's types): KIND=... goes to validate as typed, so a wrong one gets our message.
  const kindPrompt = {
    type: "list" as const,
    name: "kind",
    message: "Kind:",
    choices: [...KINDS],
    bypass: raw,
    validate: (v: string) => check(kindProblem(v)),
  };
  plop.setGenerator("rpc", {
    description: "an RPC of any kind in a service: request/response messages, a handler stub, a test",
    prompts: [
      { type: "input", name: "service", message: "Service (kebab case):", validate: (v: string) => check(rpcServiceProblem(repo, v)) },
      {
        type: "input",
        name: "name",
        message: "RPC name (PascalCase, e.g. Refund):",
        validate: (v: string, a?: RpcAnswers) => check(rpcNameProblem(v) ?? rpcTakenProblem(repo, a?.service ?? "", v)),
      },
      kindPrompt,
      {
        type: "input",
        name: "http",
        message: "HTTP rule (verb:/path, or none):",
        default: (a: RpcAnswers) => defaultHttp(a.service, a.name),
        validate: (v: string, a?: RpcAnswers) => check(httpProblem(v, a?.kind ?? "unary")),
      },
    ],
    actions: [{ type: "newRpc" }],
  });

  for (const kind of ["interceptor", "worker"] as const) {
    plop.setGenerator(kind, {
      description:
        kind === "interceptor"
          ? "an interceptor that runs first on every call, registered in a service's preStart"
          : "a periodic background worker (every()), registered in a service's workers",
      prompts: [
        { type: "input", name: "name", message: `${kind} name (kebab case):`, validate: (v: string) => check(partProblem(repo, v, kind)) },
        // Checked here too, not only when planning: a missing SERVICE is then the same one-line [ERROR] as a bad NAME.
        {
          type: "input",
          name: "service",
          message: "Register it in service (empty: the first one src/main.ts runs):",
          default: "",
          validate: (v: string) => check(partServiceProblem(repo, v)),
        },
      ],
      actions: [{ type: kind === "interceptor" ? "newInterceptor" : "newWorker" }],
    });
  }
}
