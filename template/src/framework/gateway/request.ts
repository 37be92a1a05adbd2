import {
  create,
  type DescEnum,
  type DescField,
  type DescMessage,
  fromJson,
  type JsonObject,
  type JsonValue,
  type Message,
  mergeFromJson,
  ScalarType,
} from "@bufbuild/protobuf";
import { FieldMaskSchema } from "@bufbuild/protobuf/wkt";
import { Code, GrpcError } from "../call/status.js";
import { jsonTooDeep, TOO_DEEP } from "../codec/json-depth.js";
import { RawBody, rawRequestMessage } from "./http-body.js";
import { jsonReader } from "./json-reader.js";
import type { GatewayRoute } from "./routes.js";

const JSON_READ = { ignoreUnknownFields: true } as const;
/** What an HttpBody route gets for a request without a body (fastify runs no parser then). */
const EMPTY_BODY = new RawBody(new Uint8Array(0), "");

const invalid = (message: string) => new GrpcError(Code.INVALID_ARGUMENT, message);

/**
 * Builds the request message from the body, the query and the path, in that order
 * of precedence from lowest to highest: path values always win. The body is JSON text, or the
 * raw body of a route that takes a google.api.HttpBody.
 */
export function decodeRequest(route: GatewayRoute, segments: string[], query: string, body: string | RawBody | undefined): Message {
  const input = route.method.info.desc.input;
  // The whole body is the message (so no query values), and no mask is made from it: the plain shapes
  // are read straight from the text; anything the reader is unsure of goes the general way below.
  if (route.body === "*" && typeof body === "string" && !route.rawRequest && !route.patchMask) {
    const message = jsonReader(input)?.(body);
    if (message) {
      if (route.pathFields.length > 0) merge(input, message, pathJson(route, segments), "path parameter");
      return message;
    }
  }
  // Parsed once: the message and a PATCH's field mask are both read from it.
  const json = bodyJson(route, body);
  const message = decodeBody(route, input, body, json);
  if (route.body !== "*" && query !== "") {
    const json = queryJson(route, input, query);
    if (json) merge(input, message, json, "query parameter");
  }
  if (route.pathFields.length > 0) merge(input, message, pathJson(route, segments), "path parameter");
  if (route.patchMask && json !== undefined) fillPatchMask(route, route.patchMask, message, json);
  return message;
}

/**
 * PATCH without an update_mask: the mask lists the fields the JSON body sets, nested paths included
 * (`{"title":…,"author":{"name":…}}` → `title,author.name`), in proto names, as grpc-gateway does. A
 * message given as `{}` counts as a whole; well-known types, lists and maps are leaves.
 */
function fillPatchMask(route: GatewayRoute, maskField: DescField, message: Message, json: JsonValue): void {
  const target = message as unknown as Record<string, unknown>;
  if (target[maskField.localName] !== undefined) return;
  const paths: string[] = [];
  maskPaths(route.bodyField!.message!, json, "", paths);
  target[maskField.localName] = create(FieldMaskSchema, { paths });
}

function maskPaths(desc: DescMessage, json: JsonValue, prefix: string, out: string[]): void {
  if (json === null || typeof json !== "object" || Array.isArray(json)) return;
  for (const key in json) {
    const field = desc.fields.find((f) => f.jsonName === key || f.name === key);
    if (!field) continue; // unknown fields are ignored, as by the decoder
    const path = prefix + field.name;
    const value = json[key]!;
    const nested =
      field.fieldKind === "message" &&
      !field.message.typeName.startsWith("google.protobuf.") &&
      value !== null &&
      typeof value === "object" &&
      !Array.isArray(value);
    if (!nested) {
      out.push(path);
      continue;
    }
    const before = out.length;
    maskPaths(field.message, value, `${path}.`, out);
    if (out.length === before) out.push(path);
  }
}

/**
 * For a client-streaming or bidi route: decodes each JSON message of the request stream. The query and
 * path values are parsed once, here, and set on every message (path values win, as for one message).
 */
export function streamMessageDecoder(route: GatewayRoute, segments: string[], query: string): (json: string, index: number) => Message {
  const input = route.method.info.desc.input;
  const queryValues = route.body !== "*" && query !== "" ? queryJson(route, input, query) : undefined;
  const pathValues = route.pathFields.length > 0 ? pathJson(route, segments) : undefined;
  // Checked now, so a bad query or path value fails the call before any message is read.
  if (queryValues) merge(input, create(input), queryValues, "query parameter");
  if (pathValues) merge(input, create(input), pathValues, "path parameter");
  return (json, index) => {
    let message: Message;
    try {
      message = decodeJson(route, input, json);
    } catch (err) {
      const problem = err instanceof SyntaxError ? `malformed JSON: ${err.message}` : (err as Error).message;
      throw invalid(`request message ${index + 1}: ${problem}`);
    }
    if (queryValues) merge(input, message, queryValues, "query parameter");
    if (pathValues) merge(input, message, pathValues, "path parameter");
    return message;
  };
}

/** Merges JSON built from the URL; an error names the parameter that caused it. */
function merge(input: DescMessage, message: Message, json: JsonObject, what: string): void {
  try {
    mergeFromJson(input, message, json, JSON_READ);
  } catch (err) {
    if (err instanceof GrpcError) throw err;
    const name = culprit(input, json, "");
    throw invalid(
      name === undefined ? `invalid ${what}: ${(err as Error).message}` : `invalid ${what} "${name}": ${(err as Error).message}`,
    );
  }
}

/**
 * The dotted name of the first value the JSON reader rejects on its own (error path only: it
 * re-reads each value alone). Undefined when only their combination fails (two members of a oneof).
 */
function culprit(input: DescMessage, json: JsonObject, prefix: string): string | undefined {
  for (const key in json) {
    const value = json[key]!;
    const name = prefix === "" ? key : `${prefix}.${key}`;
    if (value !== null && typeof value === "object" && !Array.isArray(value)) {
      const inner = culprit(input, value, name);
      if (inner !== undefined) return inner;
      continue;
    }
    const single: JsonObject = {};
    let node = single;
    const parts = name.split(".");
    for (let i = 0; i < parts.length - 1; i++) node = node[parts[i]!] = {};
    node[parts[parts.length - 1]!] = value;
    try {
      fromJson(input, single, JSON_READ);
    } catch {
      return name;
    }
  }
  return undefined;
}

/** The JSON body parsed, or undefined when the route takes none (or a raw HttpBody) or the body is empty. */
function bodyJson(route: GatewayRoute, body: string | RawBody | undefined): JsonValue | undefined {
  if (route.rawRequest || route.body === "" || typeof body !== "string" || body.trim() === "") return undefined;
  if (jsonTooDeep(body)) throw invalid(`request body: ${TOO_DEEP}`);
  try {
    return JSON.parse(body) as JsonValue;
  } catch (err) {
    throw invalid(`malformed JSON body: ${(err as Error).message}`);
  }
}

function decodeBody(route: GatewayRoute, input: DescMessage, body: string | RawBody | undefined, json: JsonValue | undefined): Message {
  if (route.rawRequest) return rawRequestMessage(route, body instanceof RawBody ? body : EMPTY_BODY);
  if (json === undefined) return create(input);
  try {
    return messageFromJson(route, input, json);
  } catch (err) {
    throw invalid((err as Error).message);
  }
}

/** One JSON text into the request: the whole message (`body: "*"`) or the body field. Malformed JSON throws a SyntaxError. */
function decodeJson(route: GatewayRoute, input: DescMessage, json: string): Message {
  // A plain message read straight from the text, as for a unary body; anything else, and every error, the general way.
  const message = route.body === "*" ? jsonReader(input)?.(json) : undefined;
  if (message) return message;
  // JSON.parse first (as fromJsonString would), so malformed JSON is told apart from a wrong value.
  return messageFromJson(route, input, JSON.parse(json) as JsonValue);
}

/** Parsed JSON into the request: the whole message (`body: "*"`), or the body field's value. */
function messageFromJson(route: GatewayRoute, input: DescMessage, json: JsonValue): Message {
  if (route.body === "*") return fromJson(input, json, JSON_READ);
  // Wrapping the body under its field lets the canonical JSON reader handle any field kind.
  return fromJson(input, { [route.bodyField!.jsonName]: json }, JSON_READ);
}

/** Path variables as a JSON object, nested along each variable's field chain. */
function pathJson(route: GatewayRoute, segments: string[]): JsonObject {
  const json: JsonObject = {};
  for (const { fields, start, end } of route.pathFields) {
    let raw: string;
    // One segment is fully decoded; a multi-segment value keeps %2F so its slashes stay distinguishable.
    if (end === start + 1) raw = decodeURIComponent(segments[start]!);
    else {
      raw = "";
      const stop = end ?? segments.length;
      for (let i = start; i < stop; i++) raw += (i === start ? "" : "/") + decodeKeepingSlash(segments[i]!);
    }
    setPath(json, fields, jsonValue(fields[fields.length - 1]!, raw, fields));
  }
  return json;
}

/** Percent-decodes all but `%2F` (or `%2f`), which stays exactly as the client sent it (HttpRule; grpc-gateway does the same). */
function decodeKeepingSlash(segment: string): string {
  if (!segment.includes("%")) return segment;
  let out = "";
  let from = 0;
  for (const m of segment.matchAll(/%2F/gi)) {
    out += decodeURIComponent(segment.slice(from, m.index)) + m[0];
    from = m.index + 3;
  }
  return out + decodeURIComponent(segment.slice(from));
}

function setPath(json: JsonObject, fields: readonly DescField[], value: JsonValue): void {
  let node = json;
  for (let i = 0; i < fields.length - 1; i++) node = (node[fields[i]!.jsonName] ??= {}) as JsonObject;
  node[fields[fields.length - 1]!.jsonName] = value;
}

const MAP_KEY = /^([^[\]]+)\[([^[\]]*)\]$/;

/**
 * Query parameters for the fields the path and body leave unbound: dotted paths by proto or
 * JSON name, repeated keys for lists, `map[key]=value` for maps. Unknown keys are ignored; a
 * malformed percent-escape is INVALID_ARGUMENT. `undefined` when no parameter applies.
 */
function queryJson(route: GatewayRoute, input: DescMessage, query: string): JsonObject | undefined {
  let json: JsonObject | undefined;
  for (const pair of query.split("&")) {
    if (pair === "") continue;
    const eq = pair.indexOf("=");
    const key = formDecode(eq === -1 ? pair : pair.slice(0, eq));
    const value = eq === -1 ? "" : formDecode(pair.slice(eq + 1));
    const mapMatch = key.includes("[") ? MAP_KEY.exec(key) : null;
    const fields = resolve(input, mapMatch ? mapMatch[1]! : key, route.boundPaths);
    if (!fields) continue;
    const leaf = fields[fields.length - 1]!;
    json ??= {};
    let node = json;
    for (let i = 0; i < fields.length - 1; i++) node = (node[fields[i]!.jsonName] ??= {}) as JsonObject;
    if (leaf.fieldKind === "map") {
      if (!mapMatch) throw invalid(`query parameter "${key}" is a map: set its entries as ${key}[key]=value`);
      const map = (node[leaf.jsonName] ??= {}) as JsonObject;
      map[mapMatch[2]!] = jsonValue(leaf, value, fields);
    } else if (mapMatch) {
      throw invalid(`query parameter "${mapMatch[1]}" is not a map`);
    } else if (leaf.fieldKind === "list") {
      ((node[leaf.jsonName] ??= []) as JsonValue[]).push(jsonValue(leaf, value, fields));
    } else {
      if (leaf.jsonName in node) throw invalid(`query parameter "${key}" has too many values`);
      node[leaf.jsonName] = jsonValue(leaf, value, fields);
    }
  }
  return json;
}

/** `application/x-www-form-urlencoded` decoding: `+` is a space; a bad escape is an error, not kept as text. */
function formDecode(text: string): string {
  if (!text.includes("%") && !text.includes("+")) return text;
  try {
    return decodeURIComponent(text.replaceAll("+", " "));
  } catch {
    throw invalid(`malformed percent-encoding in query string: "${text}"`);
  }
}

/** Each message's fields by proto and JSON name, made once per message type. */
const lookups = new WeakMap<DescMessage, Map<string, DescField>>();

function fieldsByName(message: DescMessage): Map<string, DescField> {
  let lookup = lookups.get(message);
  if (!lookup) {
    lookup = new Map();
    for (const f of message.fields) lookup.set(f.jsonName, f).set(f.name, f);
    lookups.set(message, lookup);
  }
  return lookup;
}

/**
 * Resolves a dotted name (proto or JSON names) through singular message fields; undefined for an
 * unknown name, or one bound by the path or the body (itself or any field above it).
 */
function resolve(message: DescMessage, dotted: string, bound: ReadonlySet<string>): DescField[] | undefined {
  const chain: DescField[] = [];
  let current: DescMessage | undefined = message;
  let path = "";
  for (const name of dotted.split(".")) {
    const field: DescField | undefined = current && fieldsByName(current).get(name);
    if (!field) return undefined;
    chain.push(field);
    path = path === "" ? field.name : `${path}.${field.name}`;
    if (bound.has(path)) return undefined;
    current = field.fieldKind === "message" ? field.message : undefined;
  }
  return chain;
}

/** Well-known types whose JSON form is a string, taken from the URL as it is. */
const STRING_JSON = new Set([
  "google.protobuf.Timestamp",
  "google.protobuf.Duration",
  "google.protobuf.StringValue",
  "google.protobuf.BytesValue",
  "google.protobuf.Int64Value",
  "google.protobuf.UInt64Value",
  "google.protobuf.Int32Value",
  "google.protobuf.UInt32Value",
  "google.protobuf.FloatValue",
  "google.protobuf.DoubleValue",
]);

const fieldName = (chain: readonly DescField[]) => chain.map((f) => f.jsonName).join(".");

/** A path or query string as the JSON value the canonical reader expects for that field. */
function jsonValue(field: DescField, raw: string, chain: readonly DescField[]): JsonValue {
  let scalar: ScalarType | undefined;
  let message: DescMessage | undefined;
  switch (field.fieldKind) {
    case "scalar":
      scalar = field.scalar;
      break;
    case "enum":
      return enumValue(field.enum, raw, chain);
    case "message":
      message = field.message;
      break;
    case "list":
      if (field.listKind === "enum") return enumValue(field.enum, raw, chain);
      if (field.listKind === "scalar") scalar = field.scalar;
      else message = field.message;
      break;
    case "map":
      if (field.mapKind === "enum") return enumValue(field.enum, raw, chain);
      if (field.mapKind === "scalar") scalar = field.scalar;
      else message = field.message;
      break;
  }
  // Numbers stay strings: the canonical reader accepts them so, and names the field when one is bad.
  if (scalar !== undefined) return scalar === ScalarType.BOOL ? parseBool(raw, chain) : raw;
  const typeName = message!.typeName;
  if (STRING_JSON.has(typeName)) return raw;
  switch (typeName) {
    case "google.protobuf.BoolValue":
      return parseBool(raw, chain);
    case "google.protobuf.FieldMask":
      // Paths by proto name (`published_at`) or JSON name (`publishedAt`); the JSON form wants the latter.
      return raw.replace(/_([a-z0-9])/g, (_, c: string) => c.toUpperCase());
    case "google.protobuf.Value":
      // JSON text, else the plain string: `?v=3` is the number 3, `?v=hello` the string "hello".
      return parseJson(raw) ?? raw;
    case "google.protobuf.Struct":
    case "google.protobuf.ListValue": {
      const json = parseJson(raw);
      if (json === undefined) throw invalid(`parameter "${fieldName(chain)}" must be JSON text (${typeName})`);
      return json;
    }
  }
  throw invalid(`parameter "${fieldName(chain)}" of type ${typeName} cannot be set from a string`);
}

/** An enum by name or by number; either must be one the enum declares (the JSON reader would drop an unknown name). */
function enumValue(desc: DescEnum, raw: string, chain: readonly DescField[]): JsonValue {
  const number = /^-?\d+$/.test(raw) ? Number(raw) : undefined;
  if (number === undefined ? desc.values.some((v) => v.name === raw) : desc.value[number] !== undefined) return number ?? raw;
  throw invalid(`invalid value for enum parameter "${fieldName(chain)}": "${raw}" is not a ${desc.typeName}`);
}

function parseJson(raw: string): JsonValue | undefined {
  try {
    return JSON.parse(raw) as JsonValue;
  } catch {
    return undefined;
  }
}

function parseBool(raw: string, chain: readonly DescField[]): boolean {
  if (raw === "true" || raw === "1") return true;
  if (raw === "false" || raw === "0") return false;
  throw invalid(`invalid value for bool parameter "${fieldName(chain)}": "${raw}"`);
}
