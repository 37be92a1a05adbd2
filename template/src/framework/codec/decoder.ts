import { isUtf8 } from "node:buffer";
import { create, type DescField, type DescMessage, type Message, protoInt64, ScalarType } from "@bufbuild/protobuf";
import { isWrapperDesc } from "@bufbuild/protobuf/wkt";
import { FALLBACK } from "./compilable.js";
import { wireTypeOf } from "./wire-type.js";

/**
 * Compiled decoders: for each message type, closures made once that read what protobuf-es's `fromBinary`
 * reads into the same message (made by protobuf-es's `create`, so it has the same shape and defaults):
 * last value wins for scalars, a repeated singular message merges, packed and unpacked repeated scalars are
 * both taken, unknown fields are kept in `$unknown` as `{ no, wireType, data }` with `data` a view of the
 * input. What this saves against protobuf-es: its reader object with a DataView, the [fieldNo, wireType]
 * array per tag, and TextDecoder for strings over 32 bytes.
 *
 * They take only well-formed input, exactly as protobuf-es would read it: anything else — a truncated
 * varint, a length past the end, a wire type the field does not have, a group, invalid UTF-8, a field
 * that ends past its message — throws FALLBACK, and the caller decodes with protobuf-es, whose message or
 * error the caller then sees. Fast accept, slow reject.
 */

export interface Reader {
  readonly buf: Uint8Array;
  readonly len: number;
  pos: number;
  depth: number;
}

export interface MessageDecoder {
  /** Reads fields into `message` up to `end`, which must then be exactly where the reader is. */
  read(message: Message, r: Reader, end: number): void;
}

type Rec = Record<string, unknown>;
type FieldDecoder = (message: Rec, r: Reader, wireType: number) => void;
type ValueReader = (r: Reader) => unknown;

/** protobuf-es's default recursion limit: nesting deeper than this is its error, so the fallback's. */
const RECURSION_LIMIT = 100;
/** Field numbers below this are looked up in an array, the rest in a map. */
const DENSE = 256;

const decoders = new WeakMap<DescMessage, MessageDecoder>();

/** The compiled decoder of a message type (which `compilable` accepted), made on first use. */
export function messageDecoder(desc: DescMessage): MessageDecoder {
  let decoder = decoders.get(desc);
  if (decoder === undefined) decoder = compileMessage(desc);
  return decoder;
}

function compileMessage(desc: DescMessage): MessageDecoder {
  const dense: (FieldDecoder | undefined)[] = [];
  const sparse = new Map<number, FieldDecoder>();
  const decoder: MessageDecoder = {
    read(message, r, end) {
      if (++r.depth > RECURSION_LIMIT) throw FALLBACK;
      const buf = r.buf;
      let unknown: { no: number; wireType: number; data: Uint8Array }[] | undefined;
      while (r.pos < end) {
        let tag = buf[r.pos]!;
        if (tag < 0x80) r.pos++;
        else tag = readTag(r);
        const no = tag >>> 3;
        const wireType = tag & 7;
        if (no === 0) throw FALLBACK;
        const field = no < DENSE ? dense[no] : sparse.get(no);
        if (field !== undefined) field(message as unknown as Rec, r, wireType);
        else {
          const data = skip(r, wireType);
          unknown ??= message.$unknown ?? [];
          unknown.push({ no, wireType, data });
        }
      }
      if (r.pos !== end) throw FALLBACK;
      if (unknown !== undefined && unknown.length > 0) message.$unknown = unknown;
      r.depth--;
    },
  };
  // Registered before the fields are compiled, so that a recursive type finds itself.
  decoders.set(desc, decoder);
  for (const field of desc.fields) {
    const read = compileField(field);
    if (field.number < DENSE) dense[field.number] = read;
    else sparse.set(field.number, read);
  }
  return decoder;
}

const blanks = new WeakMap<DescMessage, () => Message>();

/**
 * A new message with every field at its default, equal to protobuf-es's `create(desc)`: a copy of one it made,
 * with fresh lists, maps and oneofs (a spread copies the rest in the same order, at a quarter of the cost).
 */
export function blank(desc: DescMessage): () => Message {
  let make = blanks.get(desc);
  if (make === undefined) {
    const template = create(desc);
    const lists = desc.fields.filter((f) => f.fieldKind === "list").map((f) => f.localName);
    const maps = desc.fields.filter((f) => f.fieldKind === "map").map((f) => f.localName);
    const oneofs = desc.oneofs.map((o) => o.localName);
    if (Object.getPrototypeOf(template) !== Object.prototype) make = () => create(desc);
    else if (lists.length + maps.length + oneofs.length === 0) make = () => ({ ...template });
    else {
      make = () => {
        const message: Rec = { ...template };
        for (let i = 0; i < lists.length; i++) message[lists[i]!] = [];
        for (let i = 0; i < maps.length; i++) message[maps[i]!] = {};
        for (let i = 0; i < oneofs.length; i++) message[oneofs[i]!] = { case: undefined };
        return message as unknown as Message;
      };
    }
    blanks.set(desc, make);
  }
  return make;
}

function compileField(field: DescField): FieldDecoder {
  const name = field.localName;
  switch (field.fieldKind) {
    case "scalar":
    case "enum": {
      const type = field.fieldKind === "enum" ? ScalarType.INT32 : field.scalar;
      const wire = wireTypeOf(type);
      const read = scalarReader(type, field.fieldKind === "scalar" && field.longAsString);
      if (field.oneof) {
        const oneof = field.oneof.localName;
        return (m, r, wt) => {
          if (wt !== wire) throw FALLBACK;
          m[oneof] = { case: name, value: read(r) };
        };
      }
      return (m, r, wt) => {
        if (wt !== wire) throw FALLBACK;
        m[name] = read(r);
      };
    }
    case "message": {
      const child = field.message;
      const make = blank(child);
      let decoder: MessageDecoder | undefined;
      const readChild = (message: Message, r: Reader) => (decoder ??= messageDecoder(child)).read(message, r, lengthEnd(r));
      if (field.oneof) {
        const oneof = field.oneof.localName;
        return (m, r, wt) => {
          if (wt !== 2) throw FALLBACK;
          const o = m[oneof] as { case: unknown; value: Message };
          const message = o.case === name ? o.value : make();
          readChild(message, r);
          m[oneof] = { case: name, value: message };
        };
      }
      if (isWrapperDesc(child)) {
        const valueName = child.fields[0]!.localName;
        return (m, r, wt) => {
          if (wt !== 2) throw FALLBACK;
          const message = make() as unknown as Rec;
          if (m[name] !== undefined) message[valueName] = m[name];
          readChild(message as unknown as Message, r);
          m[name] = message[valueName];
        };
      }
      return (m, r, wt) => {
        if (wt !== 2) throw FALLBACK;
        const message = (m[name] as Message | undefined) ?? make();
        readChild(message, r);
        m[name] = message;
      };
    }
    case "list": {
      if (field.listKind === "message") {
        const child = field.message;
        let decoder: MessageDecoder | undefined;
        const make = blank(child);
        return (m, r, wt) => {
          if (wt !== 2) throw FALLBACK;
          const message = make();
          (decoder ??= messageDecoder(child)).read(message, r, lengthEnd(r));
          (m[name] as unknown[]).push(message);
        };
      }
      const type = field.listKind === "enum" ? ScalarType.INT32 : field.scalar;
      const wire = wireTypeOf(type);
      const read = scalarReader(type, field.listKind === "scalar" && field.longAsString);
      const packable = wire !== 2;
      return (m, r, wt) => {
        const items = m[name] as unknown[];
        if (wt === wire) items.push(read(r));
        else if (wt === 2 && packable) {
          const end = lengthEnd(r);
          while (r.pos < end) items.push(read(r));
          if (r.pos !== end) throw FALLBACK;
        } else throw FALLBACK;
      };
    }
    case "map":
      return mapField(field);
  }
}

function mapField(field: DescField & { fieldKind: "map" }): FieldDecoder {
  const name = field.localName;
  const keyWire = wireTypeOf(field.mapKey);
  const readKey = scalarReader(field.mapKey, false);
  const keyZero = String(zeroOf(field.mapKey));
  let valueWire: number;
  let readValue: (r: Reader, existing: unknown) => unknown;
  let valueDefault: () => unknown;
  if (field.mapKind === "message") {
    const child = field.message;
    const make = blank(child);
    let decoder: MessageDecoder | undefined;
    valueWire = 2;
    readValue = (r, existing) => {
      // A value repeated within one entry merges, like any singular message field.
      const message = (existing as Message | undefined) ?? make();
      (decoder ??= messageDecoder(child)).read(message, r, lengthEnd(r));
      return message;
    };
    valueDefault = make;
  } else {
    const type = field.mapKind === "enum" ? ScalarType.INT32 : field.scalar;
    const read = scalarReader(type, false);
    valueWire = wireTypeOf(type);
    readValue = (r) => read(r);
    const zero = field.mapKind === "enum" ? field.enum.values[0]!.number : zeroOf(type);
    valueDefault = type === ScalarType.BYTES ? () => new Uint8Array(0) : () => zero;
  }
  return (m, r, wt) => {
    if (wt !== 2) throw FALLBACK;
    const end = lengthEnd(r);
    let key: unknown;
    let value: unknown;
    while (r.pos < end) {
      const tag = readTag(r);
      if (tag === ((1 << 3) | keyWire)) key = readKey(r);
      else if (tag === ((2 << 3) | valueWire)) value = readValue(r, value);
      else throw FALLBACK;
    }
    if (r.pos !== end) throw FALLBACK;
    const k = key === undefined ? keyZero : String(key);
    const record = m[name] as Rec;
    if (value === undefined) value = valueDefault();
    // "__proto__" is a key like any other, not the prototype (protobuf-es's setOwn).
    if (k === "__proto__") Object.defineProperty(record, k, { value, writable: true, enumerable: true, configurable: true });
    else record[k] = value;
  };
}

function zeroOf(type: ScalarType): unknown {
  switch (type) {
    case ScalarType.STRING:
      return "";
    case ScalarType.BOOL:
      return false;
    case ScalarType.INT64:
    case ScalarType.UINT64:
    case ScalarType.FIXED64:
    case ScalarType.SFIXED64:
    case ScalarType.SINT64:
      return protoInt64.zero;
    case ScalarType.BYTES:
      return new Uint8Array(0);
    default:
      return 0;
  }
}

// ---------------------------------------------------------------------------------------------------
// Scalars.

const f32 = new Float32Array(1);
const f32Bytes = new Uint8Array(f32.buffer);
const f64 = new Float64Array(1);
const f64Bytes = new Uint8Array(f64.buffer);
const latin1Slice = Buffer.prototype.latin1Slice as (this: Uint8Array, start: number, end: number) => string;
const utf8Slice = Buffer.prototype.utf8Slice as (this: Uint8Array, start: number, end: number) => string;

function scalarReader(type: ScalarType, longAsString: boolean): ValueReader {
  const long = (read: ValueReader): ValueReader => (longAsString ? (r) => String(read(r)) : read);
  switch (type) {
    case ScalarType.STRING:
      return readString;
    case ScalarType.BOOL:
      return readBool;
    case ScalarType.DOUBLE:
      return (r) => {
        const pos = fixed(r, 8);
        for (let i = 0; i < 8; i++) f64Bytes[i] = r.buf[pos + i]!;
        return f64[0];
      };
    case ScalarType.FLOAT:
      return (r) => {
        const pos = fixed(r, 4);
        for (let i = 0; i < 4; i++) f32Bytes[i] = r.buf[pos + i]!;
        return f32[0];
      };
    case ScalarType.INT32:
      return (r) => varint32(r) | 0;
    case ScalarType.UINT32:
      return varint32;
    case ScalarType.SINT32:
      return (r) => {
        const z = varint32(r);
        return (z >>> 1) ^ -(z & 1);
      };
    case ScalarType.FIXED32:
      return (r) => int32At(r.buf, fixed(r, 4)) >>> 0;
    case ScalarType.SFIXED32:
      return (r) => int32At(r.buf, fixed(r, 4));
    case ScalarType.INT64:
      return long((r) => {
        varint64(r);
        return protoInt64.dec(lo, hi);
      });
    case ScalarType.UINT64:
      return long((r) => {
        varint64(r);
        return protoInt64.uDec(lo, hi);
      });
    case ScalarType.SINT64:
      return long((r) => {
        varint64(r);
        const s = -(lo & 1);
        return protoInt64.dec(((lo >>> 1) | ((hi & 1) << 31)) ^ s, (hi >>> 1) ^ s);
      });
    case ScalarType.FIXED64:
      return long((r) => {
        const pos = fixed(r, 8);
        return protoInt64.uDec(int32At(r.buf, pos), int32At(r.buf, pos + 4));
      });
    case ScalarType.SFIXED64:
      return long((r) => {
        const pos = fixed(r, 8);
        return protoInt64.dec(int32At(r.buf, pos), int32At(r.buf, pos + 4));
      });
    case ScalarType.BYTES:
      return (r) => {
        const end = lengthEnd(r);
        const start = r.pos;
        r.pos = end;
        return r.buf.subarray(start, end);
      };
  }
}

/** A proto3 string: valid UTF-8 or the fallback (protobuf-es's error). ASCII, the common case, is checked here. */
function readString(r: Reader): string {
  const end = lengthEnd(r);
  const start = r.pos;
  const buf = r.buf;
  r.pos = end;
  for (let i = start; i < end; i++) {
    if (buf[i]! > 0x7f) {
      if (!isUtf8(buf.subarray(start, end))) throw FALLBACK;
      return utf8Slice.call(buf, start, end);
    }
  }
  return latin1Slice.call(buf, start, end);
}

function readBool(r: Reader): boolean {
  const b = r.buf[r.pos];
  if (b !== undefined && b < 0x80) {
    r.pos++;
    return b !== 0;
  }
  varint64(r);
  return lo !== 0 || hi !== 0;
}

function int32At(buf: Uint8Array, pos: number): number {
  return buf[pos]! | (buf[pos + 1]! << 8) | (buf[pos + 2]! << 16) | (buf[pos + 3]! << 24);
}

/** Start of an n-byte fixed-width value; the reader moves past it. */
function fixed(r: Reader, n: number): number {
  const pos = r.pos;
  if (pos + n > r.len) throw FALLBACK;
  r.pos = pos + n;
  return pos;
}

// ---------------------------------------------------------------------------------------------------
// Wire primitives, each as strict as protobuf-es's reader or stricter (then: FALLBACK).

/** A length prefix; returns where the value ends, which must be within the input. */
function lengthEnd(r: Reader): number {
  const n = varint32(r);
  const end = r.pos + n;
  if (end > r.len) throw FALLBACK;
  return end;
}

/** A tag of at most 5 bytes, a field number above 0 and a wire type protobuf-es reads without groups (0, 1, 2, 5). */
function readTag(r: Reader): number {
  const start = r.pos;
  const tag = varint32(r);
  const n = r.pos - start;
  if (n > 5 || (n === 5 && r.buf[r.pos - 1]! > 0x0f)) throw FALLBACK;
  const wireType = tag & 7;
  if (tag >>> 3 === 0 || wireType === 3 || wireType === 4 || wireType > 5) throw FALLBACK;
  return tag;
}

/** An unsigned 32-bit varint, read as protobuf-es's varint32read does: up to 10 bytes, the low 32 bits kept. */
function varint32(r: Reader): number {
  const buf = r.buf;
  const len = r.len;
  let pos = r.pos;
  let result = 0;
  for (let shift = 0; shift < 28; shift += 7) {
    if (pos >= len) throw FALLBACK;
    const b = buf[pos++]!;
    result |= (b & 0x7f) << shift;
    if (b < 0x80) {
      r.pos = pos;
      return result;
    }
  }
  if (pos >= len) throw FALLBACK;
  let b = buf[pos++]!;
  result |= (b & 0x0f) << 28;
  for (let read = 5; b >= 0x80; read++) {
    if (read === 10 || pos >= len) throw FALLBACK;
    b = buf[pos++]!;
  }
  r.pos = pos;
  return result >>> 0;
}

/** The two halves of the last 64-bit varint read. */
let lo = 0;
let hi = 0;

/** A 64-bit varint into `lo` and `hi`, as protobuf-es's varint64read. */
function varint64(r: Reader): void {
  const buf = r.buf;
  const len = r.len;
  let pos = r.pos;
  let l = 0;
  let h = 0;
  for (let shift = 0; shift < 28; shift += 7) {
    if (pos >= len) throw FALLBACK;
    const b = buf[pos++]!;
    l |= (b & 0x7f) << shift;
    if (b < 0x80) {
      r.pos = pos;
      lo = l;
      hi = h;
      return;
    }
  }
  if (pos >= len) throw FALLBACK;
  const middle = buf[pos++]!;
  l |= (middle & 0x0f) << 28;
  h = (middle & 0x70) >> 4;
  if (middle < 0x80) {
    r.pos = pos;
    lo = l;
    hi = h;
    return;
  }
  for (let shift = 3; shift <= 31; shift += 7) {
    if (pos >= len) throw FALLBACK;
    const b = buf[pos++]!;
    h |= (b & 0x7f) << shift;
    if (b < 0x80) {
      r.pos = pos;
      lo = l;
      hi = h;
      return;
    }
  }
  throw FALLBACK;
}

/** Skips an unknown field's value (not a group: those fall back) and returns its bytes, a view of the input. */
function skip(r: Reader, wireType: number): Uint8Array {
  const start = r.pos;
  switch (wireType) {
    case 0:
      varint64(r);
      break;
    case 1:
      fixed(r, 8);
      break;
    case 2:
      r.pos = lengthEnd(r);
      break;
    case 5:
      fixed(r, 4);
      break;
    default:
      throw FALLBACK;
  }
  return r.buf.subarray(start, r.pos);
}
