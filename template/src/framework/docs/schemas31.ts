import { type DescEnum, type DescField, type DescMessage, type DescOneof, getOption, hasOption, ScalarType } from "@bufbuild/protobuf";
import { type FieldRules, field as fieldRules, oneof as oneofRules } from "@bufbuild/protovalidate/gen/buf/validate/validate_pb.js";
import { FieldBehavior, field_behavior } from "../../gen/google/api/field_behavior_pb.js";
import { enumSchema, type Schema, scalarSchema, wellKnownSchema } from "./schemas.js";

/** Where the OpenAPI 3.1 document keeps its schemas. */
const PREFIX = "#/components/schemas/";
const ANY_NAME = "google.protobuf.Any";
const STATUS_NAME = "google.rpc.Status";

/** protovalidate's well-known string formats that JSON Schema names too. */
const FORMATS: Record<string, string> = {
  email: "email",
  hostname: "hostname",
  ipv4: "ipv4",
  ipv6: "ipv6",
  uri: "uri",
  uriRef: "uri-reference",
  uuid: "uuid",
};

const INT32_KINDS = new Set(["int32", "uint32", "sint32", "fixed32", "sfixed32", "float", "double"]);

/**
 * JSON Schema 2020-12 schemas (OpenAPI 3.1's dialect) of messages in canonical proto3 JSON: one component
 * per message and enum, a oneof as `oneOf` (each member alone, or none), `required` from
 * `google.api.field_behavior = REQUIRED` and protovalidate `required`, protovalidate rules as keywords.
 */
export class Schema31Builder {
  readonly components: Record<string, Schema> = {};

  message(desc: DescMessage): Schema {
    const known = wellKnownSchema(desc.typeName);
    if (known) return known;
    if (desc.typeName === ANY_NAME) return this.any();
    if (!(desc.typeName in this.components)) {
      const definition: Schema = {};
      this.components[desc.typeName] = definition; // before the fields: a recursive field finds it
      Object.assign(definition, this.messageDefinition(desc));
    }
    return { $ref: PREFIX + desc.typeName };
  }

  field(field: DescField): Schema {
    const r = fieldRules31(field);
    const behavior = behaviours(field);
    const extra: Schema = {};
    if (behavior.has(FieldBehavior.OUTPUT_ONLY)) extra.readOnly = true;
    if (behavior.has(FieldBehavior.INPUT_ONLY)) extra.writeOnly = true;
    switch (field.fieldKind) {
      case "scalar":
        return { ...scalar31(field.scalar), ...r.value, ...extra };
      case "enum":
        return this.#withRules(this.#enum(field.enum), { ...r.value, ...extra });
      case "message":
        return this.#withRules(this.message(field.message), extra);
      case "list": {
        const items =
          field.listKind === "scalar"
            ? { ...scalar31(field.scalar), ...r.items }
            : field.listKind === "enum"
              ? this.#withRules(this.#enum(field.enum), r.items)
              : this.message(field.message);
        return { type: "array", items, ...r.value, ...extra };
      }
      case "map": {
        const value =
          field.mapKind === "scalar"
            ? { ...scalar31(field.scalar), ...r.items }
            : field.mapKind === "enum"
              ? this.#enum(field.enum)
              : this.message(field.message);
        const key = scalarSchema(field.mapKey);
        const note =
          key.type === "string" && !key.format
            ? {}
            : {
                description: `Keys are ${field.mapKey === ScalarType.BOOL ? "true/false" : "integers"} written as strings.`,
                propertyNames: field.mapKey === ScalarType.BOOL ? { enum: ["true", "false"] } : { pattern: "^-?[0-9]+$" },
              };
        return { type: "object", additionalProperties: value, ...note, ...r.value, ...extra };
      }
    }
  }

  /** The message's schema, without the given top-level fields (the body of a route whose path binds them). */
  messageDefinition(desc: DescMessage, omit: ReadonlySet<string> = new Set()): Schema {
    const properties: Record<string, Schema> = {};
    const required: string[] = [];
    const groups: Schema[] = [];
    for (const f of desc.fields) {
      if (omit.has(f.name) || (f.oneof && !isSynthetic(f.oneof))) continue;
      properties[f.jsonName] = this.field(f);
      if (isRequired(f)) required.push(f.jsonName);
    }
    for (const o of desc.oneofs) {
      const members = o.fields.filter((f) => !omit.has(f.name));
      if (members.length === 0) continue;
      groups.push(this.#oneof(o, members));
    }
    const schema: Schema = { type: "object", properties };
    if (required.length > 0) schema.required = required;
    if (groups.length === 1) Object.assign(schema, groups[0]);
    else if (groups.length > 1) schema.allOf = groups;
    return schema;
  }

  /** google.rpc.Status, the body of every error (`{"code","message","details"}`). */
  status(): Schema {
    this.components[STATUS_NAME] ??= {
      type: "object",
      description: "The error body: a gRPC status code, a message and typed details.",
      properties: {
        code: { type: "integer", format: "int32", description: "The gRPC status code (google.rpc.Code)." },
        message: { type: "string", description: "A developer-facing error message." },
        details: {
          type: "array",
          items: this.any(),
          description: "Error details such as google.rpc.BadRequest (type.googleapis.com/google.rpc.BadRequest), each with its @type.",
        },
      },
      required: ["code", "message"],
    };
    return { $ref: PREFIX + STATUS_NAME };
  }

  any(): Schema {
    this.components[ANY_NAME] ??= {
      type: "object",
      description:
        'A message of any type: its fields in JSON plus "@type" naming the type (a well-known type puts its JSON form in "value").',
      properties: { "@type": { type: "string", description: "type.googleapis.com/<full message name>" } },
      required: ["@type"],
      additionalProperties: true,
    };
    return { $ref: PREFIX + ANY_NAME };
  }

  /**
   * A oneof: exactly one of its variants, each setting one member and forbidding the others (`false`), plus
   * one setting none unless protovalidate requires the oneof. openapi-typescript makes this a union of
   * `{a: A; b?: never}` shapes, the usual TypeScript for "one of".
   */
  #oneof(o: DescOneof, members: readonly DescField[]): Schema {
    const forbidAll = Object.fromEntries(members.map((m) => [m.jsonName, false]));
    const variants: Schema[] = members.map((m) => ({
      type: "object",
      title: m.jsonName,
      properties: { ...forbidAll, [m.jsonName]: this.field(m) },
      required: [m.jsonName],
    }));
    const required = hasOption(o, oneofRules) && getOption(o, oneofRules).required;
    if (!required) variants.push({ type: "object", title: "none", properties: forbidAll });
    return {
      oneOf: variants,
      description: `${required ? "Exactly" : "At most"} one of ${members.map((m) => m.jsonName).join(", ")} is set (oneof ${o.name}).`,
    };
  }

  #enum(desc: DescEnum): Schema {
    if (desc.typeName === "google.protobuf.NullValue") return { type: "null", description: "JSON null." };
    this.components[desc.typeName] ??= { ...enumSchema(desc) };
    return { $ref: PREFIX + desc.typeName };
  }

  /** JSON Schema 2020-12 allows keywords beside `$ref`: rules narrow the referenced enum or message in place. */
  #withRules(ref: Schema, extra: Schema): Schema {
    return Object.keys(extra).length === 0 ? ref : { ...ref, ...extra };
  }
}

/** A proto3 `optional` field's oneof: not a oneof in JSON. */
function isSynthetic(o: DescOneof): boolean {
  return o.fields.length === 1 && o.fields[0]!.proto.proto3Optional === true;
}

function scalar31(scalar: ScalarType): Schema {
  return { ...scalarSchema(scalar) };
}

function behaviours(field: DescField): ReadonlySet<FieldBehavior> {
  return hasOption(field, field_behavior) ? new Set(getOption(field, field_behavior)) : new Set();
}

export function isRequired(field: DescField): boolean {
  return behaviours(field).has(FieldBehavior.REQUIRED) || (hasOption(field, fieldRules) && getOption(field, fieldRules).required === true);
}

/** A field's protovalidate rules as JSON Schema keywords: on the value, and on a list's items or a map's values. */
export function fieldRules31(field: DescField): { value: Schema; items: Schema } {
  if (!hasOption(field, fieldRules)) return { value: {}, items: {} };
  const rules = getOption(field, fieldRules);
  if (rules.type.case === "repeated") {
    const { minItems, maxItems, unique, items } = rules.type.value;
    const value: Schema = {};
    if (minItems > 0n) value.minItems = Number(minItems);
    if (maxItems > 0n) value.maxItems = Number(maxItems);
    if (unique) value.uniqueItems = true;
    return { value, items: items ? keywords(items) : {} };
  }
  if (rules.type.case === "map") {
    const { minPairs, maxPairs, values } = rules.type.value;
    const value: Schema = {};
    if (minPairs > 0n) value.minProperties = Number(minPairs);
    if (maxPairs > 0n) value.maxProperties = Number(maxPairs);
    return { value, items: values ? keywords(values) : {} };
  }
  return { value: keywords(rules, field.fieldKind === "enum" ? field.enum : undefined), items: {} };
}

/** The keywords of one value's rules: string lengths, patterns and formats, 32-bit and float bounds, `in`, `const`. */
function keywords(rules: FieldRules, enumDesc?: DescEnum): Schema {
  const { type } = rules;
  const out: Schema = {};
  if (type.case === "string") {
    const r = type.value;
    if (r.len > 0n) out.minLength = out.maxLength = Number(r.len);
    if (r.minLen > 0n) out.minLength = Number(r.minLen);
    if (r.maxLen > 0n) out.maxLength = Number(r.maxLen);
    if (r.pattern !== "") out.pattern = r.pattern;
    else if (r.prefix !== "" || r.suffix !== "") out.pattern = `^${escapeRegExp(r.prefix)}[\\s\\S]*${escapeRegExp(r.suffix)}$`;
    if (r.in.length > 0) out.enum = [...r.in];
    if (r.const !== "") out.const = r.const;
    const format = r.wellKnown.case && FORMATS[r.wellKnown.case];
    if (format && r.wellKnown.value === true) out.format = format;
  } else if (type.case && INT32_KINDS.has(type.case)) {
    const r = type.value as {
      lessThan: { case: string | undefined; value?: number };
      greaterThan: { case: string | undefined; value?: number };
      in: number[];
    };
    if (r.lessThan.case === "lt") out.exclusiveMaximum = r.lessThan.value;
    if (r.lessThan.case === "lte") out.maximum = r.lessThan.value;
    if (r.greaterThan.case === "gt") out.exclusiveMinimum = r.greaterThan.value;
    if (r.greaterThan.case === "gte") out.minimum = r.greaterThan.value;
    if (r.in.length > 0) out.enum = [...r.in];
  } else if (type.case === "enum" && enumDesc) {
    const r = type.value;
    const names = (numbers: readonly number[]) => numbers.map((n) => enumDesc.values.find((v) => v.number === n)?.name).filter(Boolean);
    if (r.in.length > 0) out.enum = names(r.in);
    if (r.notIn.length > 0) out.not = { enum: names(r.notIn) };
  }
  return out;
}

function escapeRegExp(text: string): string {
  return text.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");
}
