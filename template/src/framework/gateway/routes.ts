import { METHODS } from "node:http";
import { type DescField, type DescMessage, getOption } from "@bufbuild/protobuf";
import { http } from "../../gen/google/api/annotations_pb.js";
import type { HttpRule } from "../../gen/google/api/http_pb.js";
import { streamsRequests, streamsResponses } from "../call/types.js";
import type { BoundMethod } from "../server/methods.js";
import { isHttpBodyField, isHttpBodyMessage } from "./http-body.js";
import { type PathTemplate, parsePathTemplate, TemplateError } from "./path-template.js";

/** One HTTP binding of one method, resolved against the descriptors at start-up. */
export interface GatewayRoute {
  readonly method: BoundMethod;
  readonly httpMethod: string;
  readonly template: PathTemplate;
  /** Path variables with their field chains, outermost field first. */
  readonly pathFields: { fields: DescField[]; start: number; end: number | undefined }[];
  /** `""` (no body), `"*"` (the whole message) or the top-level field the body fills. */
  readonly body: string;
  readonly bodyField: DescField | undefined;
  /** The response field sent instead of the whole message, if the rule says so. */
  readonly responseBodyField: DescField | undefined;
  /** Dotted proto names of the fields the path and the body set: the query cannot set them or anything under them. */
  readonly boundPaths: ReadonlySet<string>;
  /** The body (`*` or the body field) is a google.api.HttpBody: raw bytes of any content type. */
  readonly rawRequest: boolean;
  /** The response (or its `response_body` field) is a google.api.HttpBody: sent as raw bytes. */
  readonly rawResponse: boolean;
  /**
   * A PATCH whose body is a message field, on a request with a `google.protobuf.FieldMask update_mask`:
   * that field, filled from the body's fields when the request leaves it unset (grpc-gateway's patch feature).
   */
  readonly patchMask: DescField | undefined;
  /** A client-streaming or bidi method: the body is a stream of JSON messages, read as the call reads them. */
  readonly requestStream: boolean;
  /** A server-streaming or bidi method framed by a marshaler: its HTTP headers go out when the call sends its header. */
  readonly earlyHeader: boolean;
}

export class RouteError extends Error {}

function fieldByName(message: DescMessage, name: string, where: string): DescField {
  const field = message.fields.find((f) => f.name === name);
  if (!field) throw new RouteError(`${where}: ${message.typeName} has no field "${name}"`);
  return field;
}

/** `a.b.c` → the field chain, every step but the last a singular message. */
function fieldPath(message: DescMessage, path: string[], where: string): DescField[] {
  const chain: DescField[] = [];
  let current: DescMessage | undefined = message;
  for (const name of path) {
    if (!current) throw new RouteError(`${where}: "${path.join(".")}" goes through a field that is not a message`);
    const field = fieldByName(current, name, where);
    chain.push(field);
    current = field.fieldKind === "message" ? field.message : undefined;
  }
  return chain;
}

function bindingsOf(rule: HttpRule): HttpRule[] {
  return [rule, ...rule.additionalBindings];
}

function compile(method: BoundMethod, rule: HttpRule): GatewayRoute {
  const where = `${method.info.path} google.api.http`;
  const { pattern } = rule;
  let httpMethod: string;
  let path: string;
  switch (pattern.case) {
    case "get":
    case "put":
    case "post":
    case "delete":
    case "patch":
      httpMethod = pattern.case.toUpperCase();
      path = pattern.value;
      break;
    case "custom":
      httpMethod = pattern.value.kind.toUpperCase();
      path = pattern.value.path;
      // Node's HTTP parser knows a fixed set of methods; anything else could never arrive.
      if (!METHODS.includes(httpMethod))
        throw new RouteError(`${where}: custom method "${pattern.value.kind}" is not an HTTP method Node serves`);
      break;
    default:
      throw new RouteError(`${where}: no HTTP method set`);
  }
  let template: PathTemplate;
  try {
    template = parsePathTemplate(path);
  } catch (err) {
    if (err instanceof TemplateError) throw new RouteError(`${where}: ${err.message}`);
    throw err;
  }
  const input = method.info.desc.input;
  const pathFields = template.variables.map((v) => {
    const fields = fieldPath(input, v.fieldPath, where);
    const leaf = fields[fields.length - 1]!;
    if (leaf.fieldKind !== "scalar" && leaf.fieldKind !== "enum") {
      throw new RouteError(`${where}: path variable {${v.fieldPath.join(".")}} must be a scalar or enum field`);
    }
    return { fields, start: v.start, end: v.end };
  });
  const bodyField = rule.body && rule.body !== "*" ? fieldByName(input, rule.body, where) : undefined;
  const responseBodyField = rule.responseBody ? fieldByName(method.info.desc.output, rule.responseBody, where) : undefined;
  const boundPaths = new Set(pathFields.map((p) => p.fields.map((f) => f.name).join(".")));
  if (bodyField) boundPaths.add(bodyField.name);
  const requestStream = streamsRequests(method.info.kind);
  // A stream of requests is always JSON messages, HttpBody ones included (as grpc-gateway reads them).
  const rawRequest = !requestStream && (bodyField ? isHttpBodyField(bodyField) : rule.body === "*" && isHttpBodyMessage(input));
  const rawResponse = responseBodyField ? isHttpBodyField(responseBodyField) : isHttpBodyMessage(method.info.desc.output);
  const mask = input.fields.find((f) => f.name === "update_mask");
  const patchMask =
    httpMethod === "PATCH" && bodyField?.fieldKind === "message" && !rawRequest && mask?.message?.typeName === "google.protobuf.FieldMask"
      ? mask
      : undefined;
  return {
    method,
    httpMethod,
    template,
    pathFields,
    body: rule.body,
    bodyField,
    responseBodyField,
    boundPaths,
    rawRequest,
    rawResponse,
    patchMask,
    requestStream,
    earlyHeader: streamsResponses(method.info.kind) && !rawResponse,
  };
}

/** Every HTTP binding of every served method (additional bindings included); methods without a rule get none. */
export function compileRoutes(methods: readonly BoundMethod[]): GatewayRoute[] {
  const routes: GatewayRoute[] = [];
  for (const method of methods) {
    const rule = getOption(method.info.desc, http);
    if (!rule.pattern.case) continue;
    for (const binding of bindingsOf(rule)) routes.push(compile(method, binding));
  }
  return routes;
}
