import { create, type DescField, type DescMessage, type Message, ScalarType } from "@bufbuild/protobuf";

/**
 * A request body read straight from its JSON text into a message, for the plain shape most request
 * types have: an object of string, bool and 32-bit integer fields. It gives what
 * `fromJson(desc, JSON.parse(text), { ignoreUnknownFields: true })` gives, without building the
 * intermediate object and walking it again (JSON.parse and protobuf-es's reader were ~4 % of a small
 * gateway call's CPU).
 *
 * Fast accept, slow reject: the reader only takes text it is sure of — no escapes in strings, no
 * unknown or repeated keys, no null, integers of at most 9 digits — and returns undefined for
 * anything else, which the caller then reads with JSON.parse and protobuf-es as before, so every
 * error message and status stays theirs. Written by hand because protobuf-es reads parsed JSON only.
 */
export type JsonReader = (text: string) => Message | undefined;

/** A field's value from the text at `at`, stored in `values`; the index after it, or -1 when unsure. */
type ReadValue = (text: string, at: number, out: unknown[], slot: number) => number;

interface Entry {
  readonly slot: number;
  readonly read: ReadValue;
}

const readers = new WeakMap<DescMessage, JsonReader | null>();

/** The message type's reader, or undefined when its shape is not one the fast path covers. */
export function jsonReader(desc: DescMessage): JsonReader | undefined {
  let reader = readers.get(desc);
  if (reader === undefined) {
    reader = compile(desc) ?? null;
    readers.set(desc, reader);
  }
  return reader ?? undefined;
}

const IMPLICIT = 2; // google.protobuf.FeatureSet.FieldPresence.IMPLICIT

function compile(desc: DescMessage): JsonReader | undefined {
  if (desc.fields.length === 0 || desc.oneofs.length > 0) return undefined;
  const keys: string[] = [];
  const entries: Entry[] = [];
  const locals: string[] = [];
  for (const field of desc.fields) {
    const read = valueReader(field);
    if (!read) return undefined;
    const entry = { slot: locals.length, read };
    locals.push(field.localName);
    for (const key of new Set([field.jsonName, field.name])) {
      keys.push(key);
      entries.push(entry);
    }
  }
  const count = locals.length;
  // Every field is a primitive: a copy of the zero message is what create() makes, property order included.
  const zero = create(desc) as unknown as Record<string, unknown>;
  if (Object.getPrototypeOf(zero) !== Object.prototype) return undefined; // defaults on a prototype: not a plain copy
  /** The entry of the key between `start` and `end`, compared in place: a few fields, no substring to hash. */
  const entryAt = (text: string, start: number, end: number): Entry | undefined => {
    const length = end - start;
    for (let k = 0; k < keys.length; k++) {
      const key = keys[k]!;
      if (key.length === length && text.startsWith(key, start)) return entries[k];
    }
    return undefined;
  };
  return (text) => {
    const values: unknown[] = new Array(count);
    let i = skipSpace(text, 0);
    if (text.charCodeAt(i) !== 123 /* { */) return undefined;
    i = skipSpace(text, i + 1);
    if (text.charCodeAt(i) === 125 /* } */) i++;
    else {
      for (;;) {
        if (text.charCodeAt(i) !== 34 /* " */) return undefined;
        const end = plainStringEnd(text, i + 1);
        if (end === -1) return undefined;
        const entry = entryAt(text, i + 1, end);
        // An unknown key (its value unchecked) or a field set twice: protobuf-es decides.
        if (entry === undefined || values[entry.slot] !== undefined) return undefined;
        i = skipSpace(text, end + 1);
        if (text.charCodeAt(i) !== 58 /* : */) return undefined;
        i = entry.read(text, skipSpace(text, i + 1), values, entry.slot);
        if (i === -1) return undefined;
        i = skipSpace(text, i);
        const c = text.charCodeAt(i);
        if (c === 44 /* , */) i = skipSpace(text, i + 1);
        else if (c === 125 /* } */) {
          i++;
          break;
        } else return undefined;
      }
    }
    if (skipSpace(text, i) !== text.length) return undefined;
    const message = { ...zero };
    for (let f = 0; f < count; f++) if (values[f] !== undefined) message[locals[f]!] = values[f];
    return message as unknown as Message;
  };
}

function valueReader(field: DescField): ReadValue | undefined {
  // Implicit presence only: explicit presence (proto3 `optional`, proto2) keeps defaults on a prototype.
  if (field.fieldKind !== "scalar" || field.presence !== IMPLICIT || field.name === "__proto__" || field.jsonName === "__proto__")
    return undefined;
  switch (field.scalar) {
    case ScalarType.STRING:
      return readString;
    case ScalarType.BOOL:
      return readBool;
    case ScalarType.INT32:
    case ScalarType.SINT32:
    case ScalarType.SFIXED32:
      return readInt32;
    case ScalarType.UINT32:
    case ScalarType.FIXED32:
      return readUint32;
    default:
      return undefined;
  }
}

/** JSON's insignificant whitespace: space, tab, line feed, carriage return. */
function skipSpace(text: string, i: number): number {
  for (;;) {
    const c = text.charCodeAt(i);
    if (c === 32 || c === 10 || c === 13 || c === 9) i++;
    else return i;
  }
}

/** The index of the closing quote of a string starting at `i` (after its opening quote); -1 for an escape, a control character or no end. */
function plainStringEnd(text: string, i: number): number {
  for (;;) {
    const c = text.charCodeAt(i);
    if (c === 34 /* " */) return i;
    if (c === 92 /* \ */ || c < 32 || Number.isNaN(c)) return -1;
    i++;
  }
}

/** ES2024's String.prototype.isWellFormed (Node 20+), beyond the ES2023 library this project compiles against. */
type WellFormed = string & { isWellFormed(): boolean };

const readString: ReadValue = (text, at, out, slot) => {
  if (text.charCodeAt(at) !== 34) return -1;
  const end = plainStringEnd(text, at + 1);
  if (end === -1) return -1;
  const value = text.slice(at + 1, end);
  // protobuf-es refuses a lone surrogate ("invalid UTF8"); a UTF-8 body has none, but it is its call.
  if (!(value as WellFormed).isWellFormed()) return -1;
  out[slot] = value;
  return end + 1;
};

const readBool: ReadValue = (text, at, out, slot) => {
  if (text.startsWith("true", at)) {
    out[slot] = true;
    return at + 4;
  }
  if (text.startsWith("false", at)) {
    out[slot] = false;
    return at + 5;
  }
  return -1;
};

/**
 * An integer of 1 to 9 digits, not "-0" (protobuf-es keeps -0), with no fraction or exponent; the
 * index after it, the value in `out`. Anything else, and a larger integer, is left to protobuf-es.
 */
function readInteger(text: string, at: number, out: unknown[], slot: number, signed: boolean): number {
  let i = at;
  const negative = text.charCodeAt(i) === 45; /* - */
  if (negative) {
    if (!signed) return -1;
    i++;
  }
  const start = i;
  let value = 0;
  for (;;) {
    const d = text.charCodeAt(i) - 48;
    if (!(d >= 0 && d <= 9)) break;
    value = value * 10 + d;
    i++;
  }
  const digits = i - start;
  if (digits === 0 || digits > 9 || (digits > 1 && text.charCodeAt(start) === 48) /* leading zero */) return -1;
  const c = text.charCodeAt(i);
  if (c === 46 /* . */ || c === 101 /* e */ || c === 69 /* E */) return -1;
  if (negative && value === 0) return -1;
  out[slot] = negative ? -value : value;
  return i;
}

const readInt32: ReadValue = (text, at, out, slot) => readInteger(text, at, out, slot, true);
const readUint32: ReadValue = (text, at, out, slot) => readInteger(text, at, out, slot, false);
