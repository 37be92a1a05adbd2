import { type DescEnum, type DescField, type DescMessage, type Message, ScalarType, toJsonString } from "@bufbuild/protobuf";
import { base64Encode } from "@bufbuild/protobuf/wire";
import { scalarZeroTest } from "../codec/zero.js";

/**
 * Canonical proto3 JSON of a response message as text, byte for byte what protobuf-es's
 * `toJsonString(desc, message, { alwaysEmitImplicit: true })` returns (or, for the Connect protocol,
 * without that option), but written straight into a
 * string by a writer compiled once per message type: protobuf-es builds a JSON object and then
 * stringifies it, and formats each Timestamp through `Date` again (together a few µs of every gateway
 * response). Written by hand because protobuf-es offers no string writer.
 *
 * Only the plain shapes are compiled: scalars, enums, lists, maps, nested messages and Timestamp. A
 * message type with anything else (other well-known types, unboxed wrappers, proto2 required fields,
 * a field named `__proto__`) and any value the writer does not expect (a wrong type, an out-of-range
 * Timestamp, a message of another type) go to protobuf-es itself, so its output and its errors are
 * the reference in every case the fast path is unsure of.
 */
export type JsonWriter = (message: Message) => string;

const JSON_WRITE = { alwaysEmitImplicit: true } as const;
const JSON_WRITE_SPARSE = { alwaysEmitImplicit: false } as const;
/** Returned by a compiled writer for a value it leaves to protobuf-es. */
const UNSURE = Symbol("unsure");
type Write = (value: unknown) => string | typeof UNSURE;

const IMPLICIT = 2; // google.protobuf.FeatureSet.FieldPresence.IMPLICIT
const TIMESTAMP = "google.protobuf.Timestamp";
/** protobuf-es's range for Timestamp JSON: 0001-01-01T00:00:00Z to 9999-12-31T23:59:59Z. */
const TIMESTAMP_MS_MIN = -62135596800000;
const TIMESTAMP_MS_MAX = 253402300799000;

/** A key a JS object orders first, ascending: an array index (the canonical text of an integer below 2^32 - 1). */
function isArrayIndex(key: string): boolean {
  const n = Number(key) >>> 0;
  return String(n) === key && n !== 4294967295;
}

const writers = new WeakMap<DescMessage, JsonWriter>();
const sparseWriters = new WeakMap<DescMessage, JsonWriter>();
const compiled = new WeakSet<DescMessage>();

/**
 * The JSON writer of a message type, compiled on first use (the gateway asks for each route's at start-up).
 * `emitImplicit: false` writes what `toJsonString(desc, message)` does instead: fields with implicit
 * presence are left out at their zero value, empty lists and maps too (the Connect protocol's JSON, as
 * connect-es writes it).
 */
export function jsonWriter(desc: DescMessage, emitImplicit = true): JsonWriter {
  const cache = emitImplicit ? writers : sparseWriters;
  let writer = cache.get(desc);
  if (!writer) {
    const options = emitImplicit ? JSON_WRITE : JSON_WRITE_SPARSE;
    const write = compile(desc, new Map(), emitImplicit);
    if (write) compiled.add(desc);
    writer = write
      ? (message) => {
          const json = write(message);
          return json === UNSURE ? toJsonString(desc, message, options) : json;
        }
      : (message) => toJsonString(desc, message, options);
    cache.set(desc, writer);
  }
  return writer;
}

/** Whether the type's writer is compiled, rather than protobuf-es's toJsonString (for tests). */
export function isCompiled(desc: DescMessage): boolean {
  jsonWriter(desc);
  return compiled.has(desc);
}

/** A message type's writer, or undefined when the type is not one the fast path covers. */
function compile(desc: DescMessage, seen: Map<DescMessage, Write | undefined>, emitImplicit: boolean): Write | undefined {
  if (seen.has(desc)) return seen.get(desc);
  if (desc.typeName === TIMESTAMP) return writeTimestamp;
  if (desc.typeName.startsWith("google.protobuf.")) return undefined;
  // protobuf-es builds a JS object, whose integer-like keys come first whatever the field order: a type with
  // such a json_name (`json_name = "0"`, rare) is left to it, decided here once rather than per message.
  if (desc.fields.some((f) => isArrayIndex(f.jsonName))) return undefined;
  // Recursive types: the entry is set before the fields are compiled, and filled in after.
  let self: Write | undefined;
  const ref: Write = (value) => self!(value);
  seen.set(desc, ref);
  const fields: Write[] = [];
  for (const field of desc.fields.concat().sort((a, b) => a.number - b.number)) {
    const write = compileField(field, seen, emitImplicit);
    if (!write) {
      seen.set(desc, undefined);
      return undefined;
    }
    fields.push(write);
  }
  const typeName = desc.typeName;
  self = (value) => {
    if (typeof value !== "object" || value === null || (value as Message).$typeName !== typeName) return UNSURE;
    let out = "";
    for (let i = 0; i < fields.length; i++) {
      const member = fields[i]!(value);
      if (member === UNSURE) return UNSURE;
      if (member !== "") out = out === "" ? member : `${out},${member}`;
    }
    return `{${out}}`;
  };
  seen.set(desc, self);
  return self;
}

/** A field's `"name":value` member, "" when it is left out, as protobuf-es decides with the same alwaysEmitImplicit. */
function compileField(
  field: DescField,
  seen: Map<DescMessage, Write | undefined>,
  emitImplicit: boolean,
): ((message: unknown) => string | typeof UNSURE) | undefined {
  if (field.name === "__proto__" || field.jsonName === "__proto__") return undefined;
  const key = `${JSON.stringify(field.jsonName)}:`;
  const local = field.localName;
  let write: Write | undefined;
  switch (field.fieldKind) {
    case "scalar":
      write = scalarWriter(field.scalar);
      break;
    case "enum":
      write = enumWriter(field.enum);
      break;
    case "message":
      // Wrappers are unboxed in a message (a plain value), Struct is kept as JSON: both left to protobuf-es.
      write = compile(field.message, seen, emitImplicit);
      break;
    case "list": {
      const item =
        field.listKind === "scalar"
          ? scalarWriter(field.scalar)
          : field.listKind === "enum"
            ? enumWriter(field.enum)
            : compile(field.message, seen, emitImplicit);
      write = item && listWriter(item);
      break;
    }
    case "map": {
      const value =
        field.mapKind === "scalar"
          ? scalarWriter(field.scalar)
          : field.mapKind === "enum"
            ? enumWriter(field.enum)
            : compile(field.message, seen, emitImplicit);
      write = value && mapWriter(value);
      break;
    }
  }
  if (!write) return undefined;
  const member = write;
  if (field.oneof) {
    const oneof = field.oneof.localName;
    return (message) => {
      const selected = (message as Record<string, { case?: string; value?: unknown }>)[oneof];
      if (typeof selected !== "object" || selected === null) return UNSURE;
      if (selected.case !== local) return "";
      const json = member(selected.value);
      return json === UNSURE ? UNSURE : key + json;
    };
  }
  const explicit =
    field.fieldKind === "scalar" || field.fieldKind === "enum" || field.fieldKind === "message" ? field.presence !== IMPLICIT : false;
  if (explicit && field.presence === 3 /* LEGACY_REQUIRED */) return undefined;
  if (!explicit && !emitImplicit) {
    const isZero = zeroTest(field);
    if (!isZero) return undefined;
    return (message) => {
      const value = (message as Record<string, unknown>)[local];
      if (isZero(value)) return "";
      const json = member(value);
      return json === UNSURE ? UNSURE : key + json;
    };
  }
  return (message) => {
    const value = (message as Record<string, unknown>)[local];
    if (explicit && (value === undefined || !Object.hasOwn(message as object, local))) return "";
    const json = member(value);
    return json === UNSURE ? UNSURE : key + json;
  };
}

/** Whether an implicit-presence field's value is its zero value, which protobuf-es leaves out (its isScalarZeroValue). */
function zeroTest(field: DescField): ((value: unknown) => boolean) | undefined {
  switch (field.fieldKind) {
    case "list":
      return (v) => Array.isArray(v) && v.length === 0;
    case "map":
      return (v) => typeof v === "object" && v !== null && Object.keys(v).length === 0;
    case "enum": {
      const zero = field.enum.values[0]?.number;
      return (v) => v === zero;
    }
    case "scalar":
      return scalarZeroTest(field.scalar);
    default:
      return undefined; // a message field always has explicit presence
  }
}

/** A number as JSON.stringify writes it (NaN and ±Infinity as null). */
const numberJson = (n: number) => (Number.isFinite(n) ? `${n}` : "null");

function scalarWriter(scalar: ScalarType): Write {
  switch (scalar) {
    case ScalarType.STRING:
      return (v) => (typeof v === "string" ? JSON.stringify(v) : UNSURE);
    case ScalarType.BOOL:
      return (v) => (v === true ? "true" : v === false ? "false" : UNSURE);
    case ScalarType.INT32:
    case ScalarType.SINT32:
    case ScalarType.SFIXED32:
    case ScalarType.UINT32:
    case ScalarType.FIXED32:
      return (v) => (typeof v === "number" ? numberJson(v) : UNSURE);
    case ScalarType.DOUBLE:
    case ScalarType.FLOAT:
      return (v) => {
        if (typeof v !== "number") return UNSURE;
        if (Number.isFinite(v)) return `${v}`;
        return Number.isNaN(v) ? '"NaN"' : v > 0 ? '"Infinity"' : '"-Infinity"';
      };
    case ScalarType.BYTES:
      return (v) => (v instanceof Uint8Array ? `"${base64Encode(v)}"` : UNSURE);
    default:
      // 64-bit integers: a decimal string.
      return (v) =>
        typeof v === "bigint" || typeof v === "string" || (typeof v === "number" && Number.isInteger(v))
          ? JSON.stringify(v.toString())
          : UNSURE;
  }
}

function enumWriter(desc: DescEnum): Write | undefined {
  if (desc.typeName === "google.protobuf.NullValue") return undefined;
  // desc.value holds the first value declared for each number (aliases share one).
  const names = new Map(desc.values.map((v) => [v.number, JSON.stringify(desc.value[v.number]!.jsonName)]));
  // An unknown number is written as the number.
  return (v) => (typeof v === "number" ? (names.get(v) ?? numberJson(v)) : UNSURE);
}

function listWriter(item: Write): Write {
  return (v) => {
    if (!Array.isArray(v)) return UNSURE;
    let out = "";
    for (let i = 0; i < v.length; i++) {
      const json = item(v[i]);
      if (json === UNSURE) return UNSURE;
      out = i === 0 ? json : `${out},${json}`;
    }
    return `[${out}]`;
  };
}

/** Entries in the record's own key order, which is also the order of the object protobuf-es stringifies. */
function mapWriter(value: Write): Write {
  return (v) => {
    if (typeof v !== "object" || v === null) return UNSURE;
    const record = v as Record<string, unknown>;
    const keys = Object.keys(record);
    let out = "";
    for (let i = 0; i < keys.length; i++) {
      const json = value(record[keys[i]!]);
      if (json === UNSURE) return UNSURE;
      const entry = `${JSON.stringify(keys[i])}:${json}`;
      out = i === 0 ? entry : `${out},${entry}`;
    }
    return `{${out}}`;
  };
}

/** The `YYYY-MM-DDTHH:MM:SS` of the last second formatted: a busy service writes many Timestamps per second. */
let lastSeconds = Number.NaN;
let lastPrefix = "";

/** RFC 3339 in UTC with 0, 3, 6 or 9 fractional digits, as protobuf-es writes it; anything odd is left to it. */
function writeTimestamp(v: unknown): string | typeof UNSURE {
  if (typeof v !== "object" || v === null) return UNSURE;
  const { $typeName, seconds, nanos } = v as { $typeName?: string; seconds?: unknown; nanos?: unknown };
  if ($typeName !== TIMESTAMP || typeof seconds !== "bigint" || typeof nanos !== "number") return UNSURE;
  if (!Number.isInteger(nanos) || nanos < 0 || nanos > 999_999_999) return UNSURE;
  const s = Number(seconds);
  const ms = s * 1000;
  if (!(ms >= TIMESTAMP_MS_MIN && ms <= TIMESTAMP_MS_MAX)) return UNSURE;
  if (s !== lastSeconds) {
    lastPrefix = new Date(ms).toISOString().slice(0, 19);
    lastSeconds = s;
  }
  if (nanos === 0) return `"${lastPrefix}Z"`;
  const digits = `${nanos + 1_000_000_000}`.slice(1);
  if (digits.endsWith("000000")) return `"${lastPrefix}.${digits.slice(0, 3)}Z"`;
  if (digits.endsWith("000")) return `"${lastPrefix}.${digits.slice(0, 6)}Z"`;
  return `"${lastPrefix}.${digits}Z"`;
}
