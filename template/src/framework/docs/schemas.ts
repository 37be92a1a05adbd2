import { type DescEnum, type DescField, type DescMessage, getOption, hasOption, ScalarType } from "@bufbuild/protobuf";
import { field as fieldRules } from "@bufbuild/protovalidate/gen/buf/validate/validate_pb.js";

/** A Swagger 2.0 Schema Object (the JSON Schema subset OpenAPI 2.0 allows). */
export type Schema = { [key: string]: unknown };

/** Query and path parameters cannot use $ref or objects: their type is one of these, inline. */
export type SimpleSchema = {
  type: string;
  format?: string;
  enum?: string[];
  default?: string;
  pattern?: string;
  minimum?: number;
  description?: string;
};

export const STATUS_REF = "#/definitions/google.rpc.Status";
const ANY_NAME = "google.protobuf.Any";

/** Scalars in canonical proto3 JSON: 64-bit integers are strings, bytes are base64 (grpc-gateway's formats). */
const SCALARS: Record<ScalarType, SimpleSchema> = {
  [ScalarType.DOUBLE]: { type: "number", format: "double" },
  [ScalarType.FLOAT]: { type: "number", format: "float" },
  [ScalarType.INT64]: { type: "string", format: "int64" },
  [ScalarType.UINT64]: { type: "string", format: "uint64" },
  [ScalarType.INT32]: { type: "integer", format: "int32" },
  [ScalarType.FIXED64]: { type: "string", format: "uint64" },
  [ScalarType.FIXED32]: { type: "integer", format: "int64" },
  [ScalarType.BOOL]: { type: "boolean" },
  [ScalarType.STRING]: { type: "string" },
  [ScalarType.BYTES]: { type: "string", format: "byte" },
  [ScalarType.UINT32]: { type: "integer", format: "int64" },
  [ScalarType.SFIXED32]: { type: "integer", format: "int32" },
  [ScalarType.SFIXED64]: { type: "string", format: "int64" },
  [ScalarType.SINT32]: { type: "integer", format: "int32" },
  [ScalarType.SINT64]: { type: "string", format: "int64" },
};

const UNSIGNED_32 = new Set([ScalarType.UINT32, ScalarType.FIXED32]);

/** Well-known types whose JSON form is a plain string, number or boolean (usable as a query or path value). */
const WELL_KNOWN_SIMPLE: Record<string, SimpleSchema> = {
  "google.protobuf.Timestamp": { type: "string", format: "date-time", description: "RFC 3339 timestamp, e.g. 2026-01-02T03:04:05.678Z" },
  "google.protobuf.Duration": {
    type: "string",
    pattern: "^-?[0-9]+(\\.[0-9]{1,9})?s$",
    description: 'Duration in seconds with an "s" suffix, e.g. "1.5s"',
  },
  "google.protobuf.FieldMask": { type: "string", description: 'Comma-separated field paths in lowerCamelCase, e.g. "title,author.name"' },
  "google.protobuf.DoubleValue": SCALARS[ScalarType.DOUBLE],
  "google.protobuf.FloatValue": SCALARS[ScalarType.FLOAT],
  "google.protobuf.Int64Value": SCALARS[ScalarType.INT64],
  "google.protobuf.UInt64Value": SCALARS[ScalarType.UINT64],
  "google.protobuf.Int32Value": SCALARS[ScalarType.INT32],
  "google.protobuf.UInt32Value": SCALARS[ScalarType.UINT32],
  "google.protobuf.BoolValue": SCALARS[ScalarType.BOOL],
  "google.protobuf.StringValue": SCALARS[ScalarType.STRING],
  "google.protobuf.BytesValue": SCALARS[ScalarType.BYTES],
};

/** Well-known types that are JSON documents of their own; in a query they are given as JSON text. */
const WELL_KNOWN_JSON: Record<string, Schema> = {
  "google.protobuf.Struct": { type: "object", additionalProperties: {}, description: "Any JSON object." },
  "google.protobuf.Value": { description: "Any JSON value." },
  "google.protobuf.ListValue": { type: "array", items: {}, description: "A JSON array of any values." },
};

const EMPTY: Schema = { type: "object", description: "An empty JSON object." };

export function wellKnownSchema(typeName: string): Schema | undefined {
  const simple = WELL_KNOWN_SIMPLE[typeName];
  if (simple) return { ...simple };
  const json = WELL_KNOWN_JSON[typeName];
  if (json) return { ...json };
  if (typeName === "google.protobuf.Empty") return { ...EMPTY };
  return undefined;
}

export function scalarSchema(scalar: ScalarType): SimpleSchema {
  const schema = { ...SCALARS[scalar] };
  return UNSIGNED_32.has(scalar) ? { ...schema, minimum: 0 } : schema;
}

export function enumSchema(desc: DescEnum): SimpleSchema {
  if (desc.typeName === "google.protobuf.NullValue") return { type: "string", enum: ["NULL_VALUE"], description: "Written as JSON null." };
  const names = desc.values.map((v) => v.name);
  return { type: "string", enum: names, default: names[0] };
}

/**
 * The schema of a value that fits in a query or path parameter (scalars, enums and the
 * well-known types written as strings), or undefined for values that do not.
 */
export function simpleSchema(field: DescField): SimpleSchema | undefined {
  switch (field.fieldKind) {
    case "scalar":
      return scalarSchema(field.scalar);
    case "enum":
      return enumSchema(field.enum);
    case "message":
      return simpleWellKnown(field.message.typeName);
    case "list":
      if (field.listKind === "scalar") return scalarSchema(field.scalar);
      if (field.listKind === "enum") return enumSchema(field.enum);
      return simpleWellKnown(field.message.typeName);
    case "map":
      return undefined;
  }
}

function simpleWellKnown(typeName: string): SimpleSchema | undefined {
  const simple = WELL_KNOWN_SIMPLE[typeName];
  if (simple) return { ...simple };
  if (WELL_KNOWN_JSON[typeName]) return { type: "string", description: `${typeName.slice("google.protobuf.".length)} as JSON text` };
  return undefined;
}

/** True for messages with a JSON form of their own (inlined rather than given a definition). */
export function isWellKnown(typeName: string): boolean {
  return typeName in WELL_KNOWN_SIMPLE || typeName in WELL_KNOWN_JSON || typeName === "google.protobuf.Empty";
}

/**
 * Builds `definitions` for messages and enums in canonical proto3 JSON form: one definition per
 * message (so recursive messages are just $refs), well-known types inline in their JSON forms.
 */
export class SchemaBuilder {
  readonly definitions: Record<string, Schema> = {};

  /** A `$ref` to the message's definition, or the inline schema of a well-known type. */
  message(desc: DescMessage): Schema {
    const known = wellKnownSchema(desc.typeName);
    if (known) return known;
    if (desc.typeName === ANY_NAME) return this.any();
    if (!(desc.typeName in this.definitions)) {
      const definition: Schema = { type: "object" };
      this.definitions[desc.typeName] = definition; // before the fields: a recursive field finds it
      Object.assign(definition, this.#messageDefinition(desc));
    }
    return ref(desc.typeName);
  }

  /** The message's definition without the given top-level fields (the body of a route whose path binds them). */
  messageWithout(desc: DescMessage, omit: ReadonlySet<string>): Schema {
    return this.#messageDefinition(desc, omit);
  }

  field(field: DescField): Schema {
    switch (field.fieldKind) {
      case "scalar":
        return { ...scalarSchema(field.scalar), ...rules(field) };
      case "enum":
        return this.#enum(field.enum);
      case "message":
        return this.message(field.message);
      case "list": {
        const items =
          field.listKind === "scalar"
            ? scalarSchema(field.scalar)
            : field.listKind === "enum"
              ? this.#enum(field.enum)
              : this.message(field.message);
        return { type: "array", items, ...rules(field) };
      }
      case "map": {
        const value =
          field.mapKind === "scalar"
            ? scalarSchema(field.scalar)
            : field.mapKind === "enum"
              ? this.#enum(field.enum)
              : this.message(field.message);
        const key = SCALARS[field.mapKey];
        const keyNote =
          key.type === "string" && !key.format
            ? ""
            : ` Keys are ${field.mapKey === ScalarType.BOOL ? "true/false" : "integers"} written as strings.`;
        return { type: "object", additionalProperties: value, ...(keyNote ? { description: keyNote.trim() } : {}) };
      }
    }
  }

  /** google.rpc.Status, the body of every error (`{"code","message","details"}`). */
  status(): Schema {
    if (!this.definitions["google.rpc.Status"]) {
      this.definitions["google.rpc.Status"] = {
        type: "object",
        description: "The error body: a gRPC status code, a message and typed details.",
        properties: {
          code: { type: "integer", format: "int32", description: "The gRPC status code (google.rpc.Code)." },
          message: { type: "string", description: "A developer-facing error message." },
          details: { type: "array", items: this.any(), description: "Error details such as google.rpc.BadRequest, each with its @type." },
        },
      };
    }
    return { $ref: STATUS_REF };
  }

  any(): Schema {
    this.definitions[ANY_NAME] ??= {
      type: "object",
      description:
        'A message of any type: its fields in JSON plus "@type" naming the type (a well-known type puts its JSON form in "value").',
      properties: { "@type": { type: "string", description: "type.googleapis.com/<full message name>" } },
      additionalProperties: {},
    };
    return ref(ANY_NAME);
  }

  #enum(desc: DescEnum): Schema {
    if (desc.typeName === "google.protobuf.NullValue") return { description: "JSON null." };
    this.definitions[desc.typeName] ??= enumSchema(desc);
    return ref(desc.typeName);
  }

  #messageDefinition(desc: DescMessage, omit: ReadonlySet<string> = new Set()): Schema {
    const properties: Record<string, Schema> = {};
    const required: string[] = [];
    for (const f of desc.fields) {
      if (omit.has(f.name)) continue;
      properties[f.jsonName] = this.field(f);
      if (isRequired(f)) required.push(f.jsonName);
    }
    const notes = desc.oneofs
      .filter((o) => o.fields.some((f) => !omit.has(f.name)))
      .map((o) => `At most one of ${o.fields.map((f) => f.jsonName).join(", ")} is set (oneof ${o.name}).`);
    return {
      type: "object",
      ...(notes.length > 0 ? { description: notes.join(" ") } : {}),
      properties,
      ...(required.length > 0 ? { required } : {}),
    };
  }
}

function ref(name: string): Schema {
  return { $ref: `#/definitions/${name}` };
}

function isRequired(field: DescField): boolean {
  return hasOption(field, fieldRules) && getOption(field, fieldRules).required;
}

/** Limits from protovalidate rules that JSON Schema can say as well (lengths, 32-bit ranges, item counts). */
export function rules(field: DescField): Schema {
  if (!hasOption(field, fieldRules)) return {};
  const { type } = getOption(field, fieldRules);
  const out: Schema = {};
  switch (type.case) {
    case "string":
      if (type.value.minLen > 0n) out.minLength = Number(type.value.minLen);
      if (type.value.maxLen > 0n) out.maxLength = Number(type.value.maxLen);
      break;
    case "int32":
    case "uint32":
    case "sint32":
    case "fixed32":
    case "sfixed32":
    case "float":
    case "double": {
      const { lessThan, greaterThan } = type.value;
      if (lessThan.case === "lt") Object.assign(out, { maximum: lessThan.value, exclusiveMaximum: true });
      if (lessThan.case === "lte") out.maximum = lessThan.value;
      if (greaterThan.case === "gt") Object.assign(out, { minimum: greaterThan.value, exclusiveMinimum: true });
      if (greaterThan.case === "gte") out.minimum = greaterThan.value;
      break;
    }
    case "repeated":
      if (type.value.minItems > 0n) out.minItems = Number(type.value.minItems);
      if (type.value.maxItems > 0n) out.maxItems = Number(type.value.maxItems);
      break;
  }
  return out;
}
