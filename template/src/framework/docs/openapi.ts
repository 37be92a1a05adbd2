import type { DescField, DescMessage, DescMethod, DescService } from "@bufbuild/protobuf";
import type { AuthRule } from "../auth/rules.js";
import { streamsResponses } from "../call/types.js";
import type { GatewayRoute } from "../gateway/routes.js";
import { rules, type Schema, SchemaBuilder, simpleSchema } from "./schemas.js";

/** What the document says besides the routes. */
/** What both OpenAPI documents (2.0 and 3.1) say of themselves. */
const DOCUMENT_DESCRIPTION =
  "Generated from the services' google.api.http rules. Bodies are canonical proto3 JSON (lowerCamelCase names, " +
  "64-bit integers as strings, enums as names). Errors are google.rpc.Status JSON with the HTTP status of their gRPC code.";

export interface OpenApiOptions {
  title: string;
  version: string;
  /** Every served service (tags; the first names the document). */
  services: readonly DescService[];
  /** JWT auth is on: a bearer `Authorization` scheme. */
  jwt?: boolean;
  /** Each method's rule from its proto (grpcsvc.v1.auth): public operations get `security: []`, scopes are listed. */
  rules?: (method: DescMethod) => AuthRule | undefined;
  /** API-key auth is on: an `x-api-key` header scheme. */
  apiKey?: boolean;
  /** The gateway forwards `x-api-key` (HTTP_HEADER_PREFIXES covers it); else the scheme says how to turn that on. */
  apiKeyForwarded?: boolean;
  /** Server-streaming methods also answer `text/event-stream`. */
  sse?: boolean;
}

/** Both documents' `info`. */
export function documentInfo(options: OpenApiOptions): { title: string; version: string; description: string } {
  return { title: options.title, version: options.version || "version not set", description: DOCUMENT_DESCRIPTION };
}

export interface OpenApiDocument {
  swagger: "2.0";
  info: { title: string; version: string; description: string };
  [key: string]: unknown;
}

export type Parameter = Schema & { name: string; in: "path" | "query" | "body" };

/** OpenAPI 2.0 knows these methods; custom HttpRule kinds outside them cannot be described. */
const OPENAPI_METHODS = new Set(["get", "put", "post", "delete", "options", "head", "patch"]);
const MAX_QUERY_DEPTH = 8;
/** A google.api.HttpBody on the wire: bytes of the message's own content type, no JSON. */
const RAW_BYTES: Schema = { type: "string", format: "binary" };
const ANY_MEDIA_TYPE = ["*/*"];

/** `example` for proto package `example.v1`: the name of `/swagger/<stem>.swagger.json`. */
export function documentStem(services: readonly DescService[]): string {
  const first = services[0];
  const stem = first ? first.file.proto.package.split(".")[0] || first.name.toLowerCase() : "";
  return stem.replace(/[^A-Za-z0-9_-]/g, "") || "api";
}

/**
 * The OpenAPI 2.0 document (grpc-gateway's protoc-gen-openapiv2 shape) of the gateway's routes:
 * the same compiled google.api.http bindings the gateway serves, with canonical proto3 JSON schemas.
 */
export function buildOpenApi(routes: readonly GatewayRoute[], options: OpenApiOptions): OpenApiDocument {
  const schemas = new SchemaBuilder();
  const paths: Record<string, Record<string, unknown>> = {};
  const operations = new Operations(options.sse ?? false);
  const authOn = options.jwt === true || options.apiKey === true;

  for (const route of routes) {
    const started = operations.start(route);
    if (!started) continue;
    const { verb, streaming } = started;
    const info = route.method.info;
    const { path, pathParams } = placePath(route, paths, verb);
    const result = route.rawResponse
      ? RAW_BYTES
      : route.responseBodyField
        ? schemas.field(route.responseBodyField)
        : schemas.message(info.desc.output);
    const operation: Record<string, unknown> = {
      ...started.operation,
      parameters: [...pathParams, ...bodyParams(route, schemas), ...queryParams(route)],
      responses: {
        "200": route.rawResponse
          ? {
              description: `A successful response: raw bytes${streaming ? ", streamed" : ""}, of the content type the method sets.`,
              schema: result,
            }
          : streaming
            ? {
                description: "A successful response.(streaming responses)",
                schema: {
                  type: "object",
                  title: `Stream result of ${info.desc.output.typeName}`,
                  properties: { result, error: schemas.status() },
                },
              }
            : { description: "A successful response.", schema: result },
        default: { description: "An unexpected error response.", schema: schemas.status() },
      },
    };
    if (authOn) {
      const rule = options.rules?.(info.desc);
      if (rule?.public) operation.security = [];
      else if (rule && rule.scopes.length > 0) {
        // OpenAPI 2.0 gives scopes to oauth2 schemes only: noted in an extension and the description instead.
        operation["x-required-scopes"] = rule.scopes;
        operation.description += `\n\nRequires the token scopes: ${rule.scopes.map((s) => `\`${s}\``).join(", ")} (else 403 PERMISSION_DENIED).`;
      }
    }
    if (route.rawRequest) operation.consumes = ANY_MEDIA_TYPE;
    if (route.rawResponse) operation.produces = ANY_MEDIA_TYPE;
    else if (streaming) operation.produces = options.sse ? ["application/x-ndjson", "text/event-stream"] : ["application/x-ndjson"];
    if (route.requestStream) operation.consumes = ["application/x-ndjson", "application/json"];
    paths[path]![verb] = operations.finish(route, streaming, operation);
  }
  schemas.status();

  const doc: OpenApiDocument = {
    swagger: "2.0",
    info: documentInfo(options),
    tags: operations.tags(options.services),
    consumes: ["application/json"],
    produces: ["application/json"],
    paths,
    definitions: sortKeys(schemas.definitions),
  };
  const security = securityDefinitions(options);
  if (security) {
    doc.securityDefinitions = security;
    doc.security = Object.keys(security).map((name) => ({ [name]: [] }));
  }
  return doc;
}

function securityDefinitions(options: OpenApiOptions): Record<string, Schema> | undefined {
  const defs: Record<string, Schema> = {};
  if (options.jwt) {
    // OpenAPI 2.0 has no HTTP bearer scheme (3.x's `type: http, scheme: bearer`): an API key in the Authorization
    // header, to which our Swagger UI adds the `Bearer ` prefix (routes.ts, initializerScript); other tools take the
    // description's word.
    defs.BearerAuth = {
      type: "apiKey",
      in: "header",
      name: "Authorization",
      description: BEARER_DESCRIPTION,
    };
  }
  if (options.apiKey) defs.ApiKeyAuth = apiKeyScheme(options);
  return Object.keys(defs).length > 0 ? defs : undefined;
}

/** How both documents describe a JWT bearer scheme. */
export const BEARER_DESCRIPTION =
  "A JWT: paste the token alone, as `make token` prints it; it is sent as `Authorization: Bearer` and the token.";

/** The API-key scheme, the same in both documents. */
export function apiKeyScheme(options: OpenApiOptions): Schema {
  const description =
    options.apiKeyForwarded === false
      ? "One of the service's API keys. Over HTTP it reaches the service only when HTTP_HEADER_PREFIXES includes x-api-key, which it does not now."
      : "One of the service's API keys.";
  return { type: "apiKey", in: "header", name: "x-api-key", description };
}

/**
 * What every operation of both documents (2.0 and 3.1) starts from, route by route: its tag (the service), summary,
 * description and an operationId unique across the method's bindings; then the document's tags, the served
 * services some operation uses.
 */
export class Operations {
  readonly #bindings = new Map<string, number>();
  readonly #used = new Set<string>();
  readonly #sse: boolean;

  constructor(sse: boolean) {
    this.#sse = sse;
  }

  /** Counts the route as one of its method's bindings; undefined when OpenAPI has no word for its HTTP method. */
  start(route: GatewayRoute): { verb: string; streaming: boolean; operation: Record<string, unknown> } | undefined {
    const info = route.method.info;
    const n = (this.#bindings.get(info.path) ?? 0) + 1;
    this.#bindings.set(info.path, n);
    const verb = route.httpMethod.toLowerCase();
    if (!OPENAPI_METHODS.has(verb)) return undefined;
    const service = info.desc.parent;
    this.#used.add(service.name);
    // Server-streaming and bidi answer a stream; client-streaming and bidi read one (route.requestStream).
    const streaming = streamsResponses(info.kind);
    const operation = {
      tags: [service.name],
      summary: info.desc.name,
      description: describe(route, streaming, this.#sse),
      operationId: `${service.name}_${info.desc.name}${n > 1 ? n : ""}`,
    };
    return { verb, streaming, operation };
  }

  /** The operation with the fields every operation ends with: the stream kind of a streaming one, `deprecated`. */
  finish(route: GatewayRoute, streaming: boolean, operation: Record<string, unknown>): Record<string, unknown> {
    const info = route.method.info;
    if (streaming || route.requestStream) operation["x-stream"] = STREAM_KIND[info.kind];
    if (info.desc.deprecated) operation.deprecated = true;
    return operation;
  }

  /** The document's tags: the services some operation uses, in the order they are served. */
  tags(services: readonly DescService[]): { name: string; description: string }[] {
    return services.filter((s) => this.#used.has(s.name)).map((s) => ({ name: s.name, description: `gRPC service ${s.typeName}` }));
  }
}

/** The `x-stream` marker of a streaming operation: which side streams. */
const STREAM_KIND: Record<string, string> = { server_streaming: "server", client_streaming: "client", bidi_streaming: "bidi" };

function describe(route: GatewayRoute, streaming: boolean, sse: boolean): string {
  const lines = [`gRPC: \`${route.method.info.path}\``];
  if (route.requestStream) {
    lines.push(
      "",
      `${route.method.info.kind === "bidi_streaming" ? "Bidirectional" : "Client"} streaming. The request body is a stream of JSON messages ` +
        "(streaming inputs), newline-delimited or concatenated, and may be sent chunked: each message is handed to the method as it arrives. " +
        "The size limit applies to each message, not to the whole body; a malformed message ends the call with INVALID_ARGUMENT naming it.",
    );
  }
  if (route.rawRequest) lines.push("", "The request body is taken as raw bytes (google.api.HttpBody), of any content type.");
  if (route.rawResponse) {
    lines.push(
      "",
      streaming
        ? "The response is raw bytes (google.api.HttpBody): each message's data as it comes, unframed, with the first message's content type. " +
            "An error after the first message cuts the response short (no final chunk)."
        : "The response is raw bytes (google.api.HttpBody): its data, with its content type (application/octet-stream if unset).",
    );
  } else if (streaming) {
    lines.push(
      "",
      `${route.requestStream ? "Each answer is written as it is produced" : "Server streaming"}. ` +
        'The response is newline-delimited JSON (application/x-ndjson), one `{"result": …}` object per message; ' +
        'an error after the first message arrives as a last `{"error": {code, message, details}}` line.',
    );
    if (sse) {
      lines.push(
        "",
        'With `Accept: text/event-stream` it is a server-sent event stream instead: `data: {"result": …}` frames, ' +
          "then `event: end` (data `{}`) when it succeeded or `event: error` when it failed, and `: ping` comments as heartbeats.",
      );
    }
  }
  return lines.join("\n");
}

/**
 * The OpenAPI path of a route (`{name=shelves/*}` becomes `{name}` with a pattern) and its path
 * parameters; a second route on the same path and method gets `_1`, `_2`… parameter names
 * (parameter names never reach the wire).
 */
export function placePath(
  route: GatewayRoute,
  paths: Record<string, Record<string, unknown>>,
  verb: string,
): { path: string; pathParams: Parameter[] } {
  for (let attempt = 0; ; attempt++) {
    const suffix = attempt === 0 ? "" : `_${attempt}`;
    const { path, pathParams } = templatePath(route, suffix);
    const item = (paths[path] ??= {});
    if (!(verb in item) || (pathParams.length === 0 && attempt > 0)) return { path, pathParams };
  }
}

function templatePath(route: GatewayRoute, suffix: string): { path: string; pathParams: Parameter[] } {
  const { segments, verb } = route.template;
  const parts: string[] = [];
  const pathParams: Parameter[] = [];
  let wildcards = 0;
  for (let i = 0; i < segments.length;) {
    const variable = route.pathFields.find((v) => v.start === i);
    if (variable) {
      const end = variable.end ?? segments.length;
      const name = variable.fields.map((f) => f.jsonName).join(".") + suffix;
      const leaf = variable.fields[variable.fields.length - 1]!;
      const { default: _default, ...schema } = { ...simpleSchema(leaf)!, ...rules(leaf) } as Schema;
      const param: Parameter = { name, in: "path", required: true, ...schema };
      const inner = segments.slice(i, end);
      if (!(inner.length === 1 && inner[0]!.kind === "single")) {
        const pattern = inner.map((s) => (s.kind === "literal" ? escapeRegExp(s.value) : s.kind === "single" ? "[^/]+" : ".+")).join("/");
        param.pattern = `^${pattern}$`;
        param.description = `Field ${variable.fields.map((f) => f.name).join(".")}: a resource name of the form ${shape(inner)}.`;
      }
      pathParams.push(param);
      parts.push(`{${name}}`);
      i = end;
      continue;
    }
    const segment = segments[i]!;
    if (segment.kind === "literal") parts.push(segment.value);
    else {
      const name = `_wildcard${wildcards++}${suffix}`;
      parts.push(`{${name}}`);
      pathParams.push({
        name,
        in: "path",
        required: true,
        type: "string",
        description: `Any ${segment.kind === "multi" ? "path" : "segment"}.`,
      });
    }
    i++;
  }
  return { path: `/${parts.join("/")}${verb ? `:${verb}` : ""}`, pathParams };

  function shape(inner: typeof segments): string {
    return inner.map((s) => (s.kind === "literal" ? s.value : s.kind === "single" ? "*" : "**")).join("/");
  }
}

function escapeRegExp(text: string): string {
  return text.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");
}

function bodyParams(route: GatewayRoute, schemas: SchemaBuilder): Parameter[] {
  if (route.body === "") return [];
  if (route.requestStream) {
    // As protoc-gen-openapiv2 documents streaming inputs: the schema of one message, said to be a stream of them.
    const schema = route.bodyField ? schemas.field(route.bodyField) : schemas.message(route.method.info.desc.input);
    const of = route.bodyField
      ? `the ${route.bodyField.jsonName} field of ${route.method.info.desc.input.typeName}`
      : route.method.info.desc.input.typeName;
    return [
      {
        name: route.bodyField?.jsonName ?? "body",
        in: "body",
        required: true,
        description: `A stream of ${of} messages (streaming inputs).`,
        schema,
      },
    ];
  }
  if (route.rawRequest) return [{ name: route.bodyField?.jsonName ?? "body", in: "body", required: false, schema: RAW_BYTES }];
  if (route.bodyField) return [{ name: route.bodyField.jsonName, in: "body", required: true, schema: schemas.field(route.bodyField) }];
  const input = route.method.info.desc.input;
  // body "*": every field the path does not bind.
  const omit = new Set(route.pathFields.filter((p) => p.fields.length === 1).map((p) => p.fields[0]!.name));
  const schema = omit.size === 0 ? schemas.message(input) : schemas.messageWithout(input, omit);
  return [{ name: "body", in: "body", required: true, schema }];
}

/** Query parameters for the fields neither the path nor the body binds (none when the body is "*"). */
export function queryParams(route: GatewayRoute): Parameter[] {
  if (route.body === "*") return [];
  const bound = new Set(route.pathFields.map((p) => p.fields.map((f) => f.name).join(".")));
  if (route.bodyField) bound.add(route.bodyField.name);
  const params: Parameter[] = [];
  const walk = (message: DescMessage, protoPath: string[], jsonPath: string[], seen: ReadonlySet<string>) => {
    for (const field of message.fields) {
      const proto = [...protoPath, field.name];
      if (bound.has(proto.join("."))) continue;
      const name = [...jsonPath, field.jsonName].join(".");
      const param = queryParam(field, name);
      if (param) params.push(param);
      else if (field.fieldKind === "message" && !seen.has(field.message.typeName) && proto.length < MAX_QUERY_DEPTH) {
        walk(field.message, proto, [...jsonPath, field.jsonName], new Set([...seen, field.message.typeName]));
      }
    }
  };
  const input = route.method.info.desc.input;
  walk(input, [], [], new Set([input.typeName]));
  return params;
}

function queryParam(field: DescField, name: string): Parameter | undefined {
  const simple = simpleSchema(field);
  if (!simple) return undefined;
  if (field.fieldKind === "list") {
    const { description, ...items } = simple;
    return {
      name,
      in: "query",
      required: false,
      type: "array",
      items,
      collectionFormat: "multi",
      ...(description ? { description } : {}),
      ...rules(field),
    };
  }
  return { name, in: "query", required: false, ...simple, ...rules(field) };
}

export function sortKeys<T>(record: Record<string, T>): Record<string, T> {
  return Object.fromEntries(Object.entries(record).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)));
}
