// `make new-rpc`: an RPC of any kind in a service's proto (with its messages and HTTP rule), a handler stub in
// its handlers and a test of the stub. Every input is checked against the protos as buf compiles them.
import type { FileDescriptorProto } from "@bufbuild/protobuf/wkt";
import {
  type HttpRule,
  KINDS,
  parseHttp,
  type RpcKind,
  type RpcNames,
  rpcNameProblem,
  rpcNames,
  type ServiceNames,
  serviceNameProblem,
  serviceNames,
} from "./names.js";
import { buildProtos, findService, httpRoutes, insertRpc, messageNames, routeShape } from "./proto-file.js";
import { type Change, exists, FRAMEWORK_INDEX, GeneratorError, importPath, read } from "./repo.js";
import { property, Source } from "./source-edit.js";
import { rpcHandler, rpcMessages, rpcMethod, type RpcTemplateData, rpcTest } from "./templates/rpc.js";

export interface RpcAnswers {
  service: string;
  name: string;
  kind: string;
  /** `verb:/path`, `none`, or empty for the default `post:/api/v1/<service>/<rpc>`. */
  http?: string;
}

export function rpcServiceProblem(root: string, service: string): string | undefined {
  const problem = serviceNameProblem(service, "SERVICE");
  if (problem) return problem;
  const svc = serviceNames(service);
  if (!exists(root, svc.protoPath))
    return `no service ${service}: ${svc.protoPath} does not exist (make new-service NAME=${service} creates one)`;
  if (!exists(root, svc.sourcePath)) return `no handlers for service ${service}: ${svc.sourcePath} does not exist`;
  return undefined;
}

/** An RPC, its messages or its test that exist already (asked early, so the prompt can say so). */
export function rpcTakenProblem(root: string, service: string, name: string): string | undefined {
  if (rpcServiceProblem(root, service)) return undefined; // reported by the service prompt
  return takenProblem(root, buildProtos(root), serviceNames(service), rpcNames(name));
}

function takenProblem(root: string, files: FileDescriptorProto[], svc: ServiceNames, rpc: RpcNames): string | undefined {
  // The RPC first: running the same make new-rpc twice should say that, not name the test file it wrote.
  const at = findService(files, svc.protoFile, svc.service);
  if (at?.service.method.some((m) => m.name === rpc.name)) return `${svc.service} has an RPC ${rpc.name} already`;
  const taken = messageNames(files, svc.protoPackage);
  for (const m of [rpc.request, rpc.response]) if (taken.has(m)) return `package ${svc.protoPackage} has a message ${m} already`;
  const testPath = rpcTestPath(svc, rpc);
  if (exists(root, testPath)) return `${testPath} exists already`;
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

export function planRpc(root: string, answers: RpcAnswers): Change[] {
  const problem =
    rpcServiceProblem(root, answers.service) ??
    rpcNameProblem(answers.name) ??
    kindProblem(answers.kind) ??
    httpProblem(answers.http ?? "", answers.kind);
  if (problem) throw new GeneratorError(problem);
  const svc = serviceNames(answers.service);
  const rpc = rpcNames(answers.name);
  const kind = answers.kind as RpcKind;
  const http = parseHttp(answers.http || defaultHttp(answers.service, answers.name), kind) as HttpRule | undefined;
  const testPath = rpcTestPath(svc, rpc);
  const files = buildProtos(root);
  const at = findService(files, svc.protoFile, svc.service);
  if (!at) throw new GeneratorError(`${svc.protoPath} has no service ${svc.service}`);
  const taken = takenProblem(root, files, svc, rpc) ?? (http ? routeTakenProblem(files, http) : undefined);
  if (taken) throw new GeneratorError(taken);

  const source = new Source(svc.sourcePath, read(root, svc.sourcePath));
  const handlers = property(source.serviceOptions(), "handlers");
  if (handlers?.type !== "ObjectProperty" || handlers.value.type !== "ObjectExpression") {
    throw new GeneratorError(`${svc.sourcePath}: defineService's handlers must be an object literal ({ ... }) to add ${rpc.local} to it`);
  }
  if (property(handlers.value, rpc.local)) throw new GeneratorError(`${svc.sourcePath} has a ${rpc.local} handler already`);

  const data: RpcTemplateData = {
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
  const proto = insertRpc(read(root, svc.protoPath), at, rpcMethod(data), rpcMessages(data), http ? imports : []);
  source.appendProperty(handlers.value, rpcHandler(data));
  source.ensureImported(["Code", "GrpcError"], importPath(svc.sourcePath, FRAMEWORK_INDEX));
  return [
    { path: svc.protoPath, text: proto, create: false },
    { path: svc.sourcePath, text: source.result(), create: false },
    { path: testPath, text: rpcTest(data), create: true },
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
