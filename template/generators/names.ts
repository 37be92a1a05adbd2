// Name rules of the generators: every name is checked here before anything is written, and every
// identifier a generator writes (proto package, service, file, export) is derived here.

const KEBAB = /^[a-z][a-z0-9]*(-[a-z0-9]+)*$/;
const PASCAL = /^[A-Z][A-Za-z0-9]*$/;

// A proto package named like a vendored directory would merge with it (proto/google, proto/buf, proto/grpc).
const RESERVED_STEMS = new Set(["google", "grpc", "buf"]);
// protobuf-es renames a method whose local name shadows an Object.prototype member (`toString` → `toString$`).
const OBJECT_MEMBERS = new Set(Object.getOwnPropertyNames(Object.prototype));

export interface ServiceNames {
  /** `order-book` (a trailing -service or -svc dropped) */
  kebab: string;
  /** proto package root and directory: `orderbook` */
  stem: string;
  /** `OrderBook` */
  pascal: string;
  /** `orderBook` */
  camel: string;
  /** `orderbook.v1` */
  protoPackage: string;
  /** `OrderBookService` */
  service: string;
  /** the handlers' export: `orderBookService` */
  exportName: string;
  /** `proto/orderbook/v1/orderbook.proto` */
  protoPath: string;
  /** buf's file name (relative to proto/): `orderbook/v1/orderbook.proto` */
  protoFile: string;
  /** `src/service/order-book-service.ts` */
  sourcePath: string;
  /** `test/order-book-service.test.ts` */
  testPath: string;
  /** the generated code: `src/gen/orderbook/v1/orderbook_pb.ts` (imported as `.js`) */
  genModule: string;
}

const pascalOf = (kebab: string) =>
  kebab
    .split("-")
    .map((w) => w.charAt(0).toUpperCase() + w.slice(1))
    .join("");
const lowerFirst = (s: string) => s.charAt(0).toLowerCase() + s.slice(1);

/** Why `name` cannot name a service, or undefined. `what` names the input in the message (NAME, SERVICE). */
export function serviceNameProblem(name: string, what = "NAME"): string | undefined {
  if (name === "") return `${what} is required: a kebab-case name such as billing or order-book`;
  if (!KEBAB.test(name))
    return `invalid ${what} "${name}": use kebab case such as billing or order-book (lower-case letters, digits, single dashes)`;
  const stem = stemOf(name);
  if (stem === "") return `invalid ${what} "${name}": nothing is left once -service/-svc is dropped`;
  if (RESERVED_STEMS.has(stem)) return `invalid ${what} "${name}": proto/${stem}/ holds vendored third-party protos`;
  // The service's package is <stem>.v1: a stem that is itself a version (v1, v2beta) would make v1.v1.
  if (/^v\d+((alpha|beta)\d*)?$/.test(stem))
    return `invalid ${what} "${name}": ${stem} is a version, and the generator adds one (package ${stem}.v1): name the service by what it does`;
  return undefined;
}

function baseOf(name: string): string {
  return name.replace(/-(service|svc)$/, "");
}

function stemOf(name: string): string {
  return baseOf(name).replaceAll("-", "");
}

export function serviceNames(name: string): ServiceNames {
  const kebab = baseOf(name);
  const stem = stemOf(name);
  const pascal = pascalOf(kebab);
  return {
    kebab,
    stem,
    pascal,
    camel: lowerFirst(pascal),
    protoPackage: `${stem}.v1`,
    service: `${pascal}Service`,
    exportName: `${lowerFirst(pascal)}Service`,
    protoPath: `proto/${stem}/v1/${stem}.proto`,
    protoFile: `${stem}/v1/${stem}.proto`,
    sourcePath: `src/service/${kebab}-service.ts`,
    testPath: `test/${kebab}-service.test.ts`,
    genModule: `src/gen/${stem}/v1/${stem}_pb`,
  };
}

export interface RpcNames {
  /** `Refund` */
  name: string;
  /** the handler's and client's method name: `refund` */
  local: string;
  /** `refund`, `get-invoice`: URL path segment and file name part */
  kebab: string;
  request: string;
  response: string;
}

export function rpcNameProblem(name: string): string | undefined {
  if (name === "") return "NAME is required: a PascalCase RPC name such as Refund or GetInvoice";
  if (!PASCAL.test(name))
    return `invalid NAME "${name}": use PascalCase such as Refund or GetInvoice (letters and digits, first one upper-case)`;
  if (OBJECT_MEMBERS.has(lowerFirst(name))) return `invalid NAME "${name}": ${lowerFirst(name)} is a member of every JavaScript object`;
  return undefined;
}

export function rpcNames(name: string): RpcNames {
  return {
    name,
    local: lowerFirst(name),
    kebab: name
      .replace(/([a-z0-9])([A-Z])/g, "$1-$2")
      .replace(/([A-Z])([A-Z][a-z])/g, "$1-$2")
      .toLowerCase(),
    request: `${name}Request`,
    response: `${name}Response`,
  };
}

export interface PartNames {
  kebab: string;
  /** `auditInterceptor`, `reindexWorker` */
  exportName: string;
  /** `src/service/audit-interceptor.ts` */
  sourcePath: string;
  testPath: string;
}

/** Interceptors and workers: `kind` is `interceptor` or `worker`. */
export function partNameProblem(name: string): string | undefined {
  if (name === "") return "NAME is required: a kebab-case name such as audit or reindex";
  if (!KEBAB.test(name))
    return `invalid NAME "${name}": use kebab case such as audit or cache-refresh (lower-case letters, digits, single dashes)`;
  return undefined;
}

export function partNames(name: string, kind: "interceptor" | "worker"): PartNames {
  return {
    kebab: name,
    exportName: `${lowerFirst(pascalOf(name))}${pascalOf(kind)}`,
    sourcePath: `src/service/${name}-${kind}.ts`,
    testPath: `test/${name}-${kind}.test.ts`,
  };
}

export const KINDS = ["unary", "server-stream", "client-stream", "bidi"] as const;
export type RpcKind = (typeof KINDS)[number];

export interface HttpRule {
  verb: "get" | "post" | "put" | "patch" | "delete";
  path: string;
  /** Path variables, i.e. request fields: `{invoice_id}` → `invoice_id`. */
  variables: string[];
  /** `*` for the verbs that carry a body. */
  body: "*" | undefined;
}

const VERBS = new Set(["get", "post", "put", "patch", "delete"]);
const SEGMENT = /^(?:[A-Za-z0-9._~-]+|\{[a-z][a-z0-9_]*\})$/;

/**
 * Parses `verb:/path` (or `none`). Only plain literal segments and `{field}` variables: the generated request
 * message gets one string field per variable. Returns the rule, undefined for `none`, or a problem string.
 */
export function parseHttp(spec: string, kind: RpcKind): HttpRule | undefined | string {
  if (spec === "none") return undefined;
  const colon = spec.indexOf(":");
  const verb = spec.slice(0, colon).toLowerCase();
  const path = spec.slice(colon + 1);
  if (colon < 0 || !VERBS.has(verb))
    return `invalid HTTP "${spec}": use <verb>:<path> with get, post, put, patch or delete, e.g. post:/api/v1/billing/refund (or none)`;
  const segments = path.split("/");
  if (!path.startsWith("/") || path === "/" || segments.slice(1).some((s) => !SEGMENT.test(s) || s === "." || s === "..")) {
    return `invalid HTTP path "${path}": segments of letters, digits, . _ ~ - (not . or .. alone) and {field} variables (snake_case), starting with /`;
  }
  const variables = segments.filter((s) => s.startsWith("{")).map((s) => s.slice(1, -1));
  if (new Set(variables).size !== variables.length) return `invalid HTTP path "${path}": a variable appears twice`;
  const hasBody = verb !== "get" && verb !== "delete";
  if (!hasBody && (kind === "client-stream" || kind === "bidi")) {
    return `invalid HTTP "${spec}": a ${kind} RPC reads its request messages from the body, so it needs post, put or patch`;
  }
  return { verb: verb as HttpRule["verb"], path, variables, body: hasBody ? "*" : undefined };
}
