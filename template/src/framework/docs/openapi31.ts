import type { GatewayRoute } from "../gateway/routes.js";
import {
  apiKeyScheme,
  BEARER_DESCRIPTION,
  documentInfo,
  type OpenApiOptions,
  Operations,
  type Parameter,
  placePath,
  queryParams,
  sortKeys,
} from "./openapi.js";
import type { Schema } from "./schemas.js";
import { Schema31Builder } from "./schemas31.js";

export interface OpenApi31Options extends OpenApiOptions {
  /** JWT_OIDC_ISSUER: an `openIdConnect` scheme pointing at its discovery document. */
  oidcIssuer?: string;
}

export interface OpenApi31Document {
  openapi: "3.1.1";
  info: { title: string; version: string; description: string };
  [key: string]: unknown;
}

const RAW_BYTES: Schema = { type: "string", format: "binary" };
const NDJSON = "application/x-ndjson";
const SSE = "text/event-stream";

/**
 * The OpenAPI 3.1 document of the gateway's routes, from the same compiled bindings and descriptors as the
 * 2.0 one (openapi.ts): the generators consumers use (openapi-typescript, hey-api, orval) read 3.x only.
 * Schemas are JSON Schema 2020-12 (schemas31.ts): oneofs as `oneOf`, required fields, protovalidate rules.
 */
export function buildOpenApi31(routes: readonly GatewayRoute[], options: OpenApi31Options): OpenApi31Document {
  const schemas = new Schema31Builder();
  const paths: Record<string, Record<string, unknown>> = {};
  const operations = new Operations(options.sse ?? false);
  const schemes = securitySchemes(options);

  for (const route of routes) {
    const started = operations.start(route);
    if (!started) continue;
    const { verb, streaming } = started;
    const info = route.method.info;
    const { path, pathParams } = placePath(route, paths, verb);
    const operation: Record<string, unknown> = started.operation;
    const parameters = [...pathParams, ...queryParams(route)].map(parameter31);
    if (parameters.length > 0) operation.parameters = parameters;
    const body = requestBody(route, schemas);
    if (body) operation.requestBody = body;
    operation.responses = {
      "200": response(route, streaming, options.sse ?? false, schemas),
      default: { description: "An error: google.rpc.Status JSON with the HTTP status of its gRPC code.", content: json(schemas.status()) },
    };
    if (schemes) {
      const rule = options.rules?.(info.desc);
      if (rule?.public) operation.security = [];
      else {
        const scopes = rule?.scopes ?? [];
        // OpenAPI 3.1 lets any scheme list the roles it needs; an API key carries no scopes, so it cannot call a scoped method.
        operation.security = Object.keys(schemes)
          .filter((name) => scopes.length === 0 || name !== "ApiKeyAuth")
          .map((name) => ({ [name]: [...scopes] }));
        if (scopes.length > 0) {
          operation.description += `\n\nRequires the token scopes: ${scopes.map((s) => `\`${s}\``).join(", ")} (else 403 PERMISSION_DENIED).`;
        }
      }
    }
    paths[path]![verb] = operations.finish(route, streaming, operation);
  }
  schemas.status();

  const doc: OpenApi31Document = {
    openapi: "3.1.1",
    info: documentInfo(options),
    jsonSchemaDialect: "https://spec.openapis.org/oas/3.1/dialect/base",
    tags: operations.tags(options.services),
    paths,
    components: { schemas: sortKeys(schemas.components), ...(schemes ? { securitySchemes: schemes } : {}) },
  };
  return doc;
}

function json(schema: Schema): Record<string, { schema: Schema }> {
  return { "application/json": { schema } };
}

/** A 2.0 parameter (its schema keywords inline) as a 3.1 one (`schema`; repeated query values as `name=a&name=b`). */
function parameter31(p: Parameter): Schema {
  const { name, in: where, required, description, collectionFormat: _multi, ...schema } = p;
  return { name, in: where, required, ...(description ? { description } : {}), schema };
}

function requestBody(route: GatewayRoute, schemas: Schema31Builder): Schema | undefined {
  if (route.body === "") return undefined;
  const input = route.method.info.desc.input;
  if (route.requestStream) {
    const schema = route.bodyField ? schemas.field(route.bodyField) : schemas.message(input);
    return {
      required: true,
      description: `A stream of ${route.bodyField ? `the ${route.bodyField.jsonName} field of ` : ""}${input.typeName} messages: newline-delimited JSON, one message a line (the schema is one message's).`,
      content: { [NDJSON]: { schema }, "application/json": { schema } },
    };
  }
  if (route.rawRequest) return { required: false, content: { "*/*": { schema: RAW_BYTES } } };
  if (route.bodyField) return { required: true, content: json(schemas.field(route.bodyField)) };
  // body "*": every field the path does not bind.
  const omit = new Set(route.pathFields.filter((p) => p.fields.length === 1).map((p) => p.fields[0]!.name));
  return { required: true, content: json(omit.size === 0 ? schemas.message(input) : schemas.messageDefinition(input, omit)) };
}

function response(route: GatewayRoute, streaming: boolean, sse: boolean, schemas: Schema31Builder): Schema {
  const output = route.method.info.desc.output;
  if (route.rawResponse) {
    return {
      description: `A successful response: raw bytes${streaming ? ", streamed" : ""}, of the content type the method sets.`,
      content: { "*/*": { schema: RAW_BYTES } },
    };
  }
  const result = route.responseBodyField ? schemas.field(route.responseBodyField) : schemas.message(output);
  if (!streaming) return { description: "A successful response.", content: json(result) };
  const line: Schema = {
    type: "object",
    title: `Stream result of ${output.typeName}`,
    description: 'One line of the stream: {"result": …} per message, a last {"error": …} if the call fails after the first.',
    properties: { result, error: schemas.status() },
  };
  const content: Record<string, { schema: Schema }> = { [NDJSON]: { schema: line } };
  if (sse) {
    content[SSE] = {
      schema: {
        type: "string",
        description: 'Server-sent events: `data: {"result": …}` frames, then `event: end` or `event: error` (a google.rpc.Status).',
      },
    };
  }
  return { description: "A successful response: a stream of messages.", content };
}

function securitySchemes(options: OpenApi31Options): Record<string, Schema> | undefined {
  const schemes: Record<string, Schema> = {};
  if (options.jwt) {
    schemes.BearerAuth = {
      type: "http",
      scheme: "bearer",
      bearerFormat: "JWT",
      description: BEARER_DESCRIPTION,
    };
  }
  if (options.jwt && options.oidcIssuer) {
    schemes.OpenIdConnect = {
      type: "openIdConnect",
      openIdConnectUrl: `${options.oidcIssuer.replace(/\/+$/, "")}/.well-known/openid-configuration`,
      description: "Tokens from the configured OpenID Connect issuer, sent as a bearer token.",
    };
  }
  if (options.apiKey) schemes.ApiKeyAuth = apiKeyScheme(options);
  return Object.keys(schemes).length > 0 ? schemes : undefined;
}
