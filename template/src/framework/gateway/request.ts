import {
  create,
  type DescField,
  type DescMessage,
  fromJson,
  fromJsonString,
  type JsonObject,
  type JsonValue,
  type Message,
  mergeFromJson,
  ScalarType,
} from "@bufbuild/protobuf";
import { Code, GrpcError } from "../errors/status.js";
import type { GatewayRoute } from "./routes.js";

const JSON_READ = { ignoreUnknownFields: true } as const;

const invalid = (message: string) => new GrpcError(Code.INVALID_ARGUMENT, message);

/**
 * Builds the request message from the body, the query and the path, in that order
 * of precedence from lowest to highest: path values always win.
 */
export function decodeRequest(route: GatewayRoute, segments: string[], query: string, body: string | undefined): Message {
  const input = route.method.info.desc.input;
  const message = decodeBody(route, input, body);
  try {
    if (route.body !== "*" && query !== "") mergeFromJson(input, message, queryJson(route, input, query), JSON_READ);
    if (route.pathFields.length > 0) mergeFromJson(input, message, pathJson(route, segments), JSON_READ);
  } catch (err) {
    throw err instanceof GrpcError ? err : invalid((err as Error).message);
  }
  return message;
}

function decodeBody(route: GatewayRoute, input: DescMessage, body: string | undefined): Message {
  const text = body?.trim() ? body : undefined;
  try {
    if (route.body === "*") return text ? fromJsonString(input, text, JSON_READ) : create(input);
    if (route.bodyField && text) {
      // Wrapping the body under its field lets the canonical JSON reader handle any field kind.
      return fromJson(input, { [route.bodyField.jsonName]: JSON.parse(text) as JsonValue }, JSON_READ);
    }
    return create(input);
  } catch (err) {
    throw invalid(err instanceof SyntaxError ? `malformed JSON body: ${err.message}` : (err as Error).message);
  }
}

/** Path variables as a JSON object, nested along each variable's field chain. */
function pathJson(route: GatewayRoute, segments: string[]): JsonObject {
  const json: JsonObject = {};
  for (const { fields, start, end } of route.pathFields) {
    const parts = segments.slice(start, end);
    // One segment is fully decoded; a multi-segment value keeps %2F so its slashes stay distinguishable.
    const raw = parts.length === 1 && end !== undefined ? decodeURIComponent(parts[0]!) : parts.map(decodeKeepingSlash).join("/");
    setPath(json, fields, jsonValue(fields[fields.length - 1]!, raw));
  }
  return json;
}

function decodeKeepingSlash(segment: string): string {
  return segment
    .split(/%2F/i)
    .map((s) => decodeURIComponent(s))
    .join("%2F");
}

function setPath(json: JsonObject, fields: DescField[], value: JsonValue): void {
  let node = json;
  for (const f of fields.slice(0, -1)) node = (node[f.jsonName] ??= {}) as JsonObject;
  node[fields[fields.length - 1]!.jsonName] = value;
}

/**
 * Query parameters for the fields the path and body leave unbound: dotted paths by proto or
 * JSON name, repeated keys for lists, `map[key]=value` for maps. Unknown keys are ignored.
 */
function queryJson(route: GatewayRoute, input: DescMessage, query: string): JsonObject {
  const bound = new Set(route.pathFields.map((p) => p.fields.map((f) => f.name).join(".")));
  if (route.bodyField) bound.add(route.bodyField.name);
  const json: JsonObject = {};
  for (const [key, raw] of new URLSearchParams(query)) {
    const mapMatch = /^([^[\]]+)\[([^[\]]*)\]$/.exec(key);
    const names = (mapMatch ? mapMatch[1]! : key).split(".");
    const fields = resolve(input, names);
    if (!fields || bound.has(fields.map((f) => f.name).join("."))) continue;
    const leaf = fields[fields.length - 1]!;
    let node = json;
    for (const f of fields.slice(0, -1)) node = (node[f.jsonName] ??= {}) as JsonObject;
    if (leaf.fieldKind === "map" && mapMatch) {
      const map = (node[leaf.jsonName] ??= {}) as JsonObject;
      map[mapMatch[2]!] = jsonValue(leaf, raw);
    } else if (leaf.fieldKind === "list") {
      ((node[leaf.jsonName] ??= []) as JsonValue[]).push(jsonValue(leaf, raw));
    } else if (!mapMatch && leaf.fieldKind !== "map") {
      if (leaf.jsonName in node) throw invalid(`query parameter "${key}" has too many values`);
      node[leaf.jsonName] = jsonValue(leaf, raw);
    }
  }
  return json;
}

/** Resolves a dotted name (proto or JSON names) through singular message fields. */
function resolve(message: DescMessage, names: string[]): DescField[] | undefined {
  const chain: DescField[] = [];
  let current: DescMessage | undefined = message;
  for (const name of names) {
    const field: DescField | undefined = current?.fields.find((f) => f.name === name || f.jsonName === name);
    if (!field) return undefined;
    chain.push(field);
    current = field.fieldKind === "message" ? field.message : undefined;
  }
  return chain;
}

const WRAPPERS_AS_TEXT = new Set([
  "google.protobuf.Timestamp",
  "google.protobuf.Duration",
  "google.protobuf.FieldMask",
  "google.protobuf.StringValue",
  "google.protobuf.BytesValue",
  "google.protobuf.Int64Value",
  "google.protobuf.UInt64Value",
  "google.protobuf.Int32Value",
  "google.protobuf.UInt32Value",
  "google.protobuf.FloatValue",
  "google.protobuf.DoubleValue",
]);

/** A path or query string as the JSON value the canonical reader expects for that field. */
function jsonValue(field: DescField, raw: string): JsonValue {
  const kind = field.fieldKind === "list" ? field.listKind : field.fieldKind === "map" ? field.mapKind : field.fieldKind;
  if (kind === "enum") return /^-?\d+$/.test(raw) ? Number(raw) : raw;
  if (kind === "scalar") {
    const scalar = field.fieldKind === "list" || field.fieldKind === "map" || field.fieldKind === "scalar" ? field.scalar : undefined;
    return scalar === ScalarType.BOOL ? parseBool(field, raw) : raw; // numbers are accepted as JSON strings
  }
  const message = field.fieldKind === "list" || field.fieldKind === "map" || field.fieldKind === "message" ? field.message : undefined;
  const typeName = message?.typeName ?? "";
  if (WRAPPERS_AS_TEXT.has(typeName)) return raw;
  if (typeName === "google.protobuf.BoolValue") return parseBool(field, raw);
  if (typeName === "google.protobuf.Struct" || typeName === "google.protobuf.Value" || typeName === "google.protobuf.ListValue") {
    try {
      return JSON.parse(raw) as JsonValue;
    } catch {
      throw invalid(`invalid JSON in parameter "${field.name}"`);
    }
  }
  throw invalid(`parameter "${field.name}" of type ${typeName} cannot be set from a string`);
}

function parseBool(field: DescField, raw: string): boolean {
  if (raw === "true" || raw === "1") return true;
  if (raw === "false" || raw === "0") return false;
  throw invalid(`invalid value for bool parameter "${field.name}": "${raw}"`);
}
