import { type DescField, type DescMessage, type Message, ScalarType } from "@bufbuild/protobuf";
import { isWrapperDesc } from "@bufbuild/protobuf/wkt";
import { FALLBACK } from "./compilable.js";
import { wireTypeOf } from "./wire-type.js";
import { scalarZeroTest } from "./zero.js";

/**
 * Compiled encoders: for each message type, closures made once that write exactly the bytes protobuf-es's
 * `toBinary` writes (fields by number, defaults of implicit-presence fields left out, packed repeated
 * scalars, unknown fields written back last). Two passes over the message: the first sizes it (and every
 * length-delimited part in it, in the order the second will write them), then the whole message is written
 * into one `Buffer.allocUnsafe` of that size, which Node slices from its pool for small messages. What this
 * saves against protobuf-es is its growing writer: a new ArrayBuffer per message, another for the result,
 * and then `Buffer.from`'s copy.
 *
 * A value protobuf-es would coerce or reject (a string in an int32 field, an out-of-range number, a
 * message of another type) throws FALLBACK while sizing: the caller then encodes with protobuf-es, so such
 * a message gets protobuf-es's bytes or its error, whichever that is.
 */

/** The lengths of a message's length-delimited parts, pushed in the order they are written. */
export interface Lengths {
  list: number[];
  next: number;
}

export interface MessageEncoder {
  size(message: Message, lengths: Lengths): number;
  write(message: Message, buf: Buffer, pos: number, lengths: Lengths): number;
}

type Rec = Record<string, unknown>;
type FieldEncoder = MessageEncoder;

const IMPLICIT = 2;
const LEGACY_REQUIRED = 3;
const hasOwn = Object.prototype.hasOwnProperty;

const encoders = new WeakMap<DescMessage, MessageEncoder>();

/** The compiled encoder of a message type (which `compilable` accepted), made on first use. */
export function messageEncoder(desc: DescMessage): MessageEncoder {
  let encoder = encoders.get(desc);
  if (encoder === undefined) encoder = compileMessage(desc);
  return encoder;
}

function compileMessage(desc: DescMessage): MessageEncoder {
  const typeName = desc.typeName;
  const fields: FieldEncoder[] = [];
  let all: FieldEncoder = { size: () => 0, write: (_m, _b, pos) => pos };
  const encoder: MessageEncoder = {
    size(message, lengths) {
      if (message.$typeName !== typeName) throw FALLBACK;
      let size = all.size(message, lengths);
      const unknown = message.$unknown;
      if (unknown !== undefined) {
        for (let i = 0; i < unknown.length; i++) {
          const u = unknown[i]!;
          size += varintSize(((u.no << 3) | u.wireType) >>> 0) + u.data.byteLength;
        }
      }
      return size;
    },
    write(message, buf, pos, lengths) {
      pos = all.write(message, buf, pos, lengths);
      const unknown = message.$unknown;
      if (unknown !== undefined) {
        for (let i = 0; i < unknown.length; i++) {
          const u = unknown[i]!;
          pos = writeVarint(buf, pos, ((u.no << 3) | u.wireType) >>> 0);
          buf.set(u.data, pos);
          pos += u.data.byteLength;
        }
      }
      return pos;
    },
  };
  // Registered before the fields are compiled, so that a recursive type finds itself.
  encoders.set(desc, encoder);
  for (const field of desc.fields.concat().sort((a, b) => a.number - b.number)) fields.push(compileField(field));
  all = unrolled(fields);
  return encoder;
}

function compileField(field: DescField): FieldEncoder {
  switch (field.fieldKind) {
    case "list":
      return field.listKind === "message"
        ? messageList(field)
        : scalarList(field, field.listKind === "enum" ? ScalarType.INT32 : field.scalar);
    case "map":
      return mapField(field);
    default:
      return singular(field);
  }
}

/**
 * All fields of a message, one call site per field: each site then sees one encoder only, which V8 inlines,
 * where a loop's single site sees them all. Generated from field indices alone (nothing from the descriptor
 * is in the source); where code generation is off (--disallow-code-generation-from-strings), a loop.
 */
function unrolled(fields: FieldEncoder[]): FieldEncoder {
  const n = fields.length;
  const ids = Array.from({ length: n }, (_, i) => i);
  const locals = ids.map((i) => `const f${i} = f[${i}];`).join("\n");
  const size = ids.map((i) => `f${i}.size(m, l)`).join(" + ") || "0";
  const write = ids.map((i) => `p = f${i}.write(m, b, p, l);`).join("\n");
  try {
    return new Function("f", `${locals}\nreturn { size(m, l) { return ${size}; }, write(m, b, p, l) { ${write}\nreturn p; } };`)(fields);
  } catch {
    return {
      size(m, l) {
        let size = 0;
        for (let i = 0; i < n; i++) size += fields[i]!.size(m, l);
        return size;
      },
      write(m, b, p, l) {
        for (let i = 0; i < n; i++) p = fields[i]!.write(m, b, p, l);
        return p;
      },
    };
  }
}

/** A scalar, enum or message field, with protobuf-es's presence rules. */
function singular(field: DescField & { fieldKind: "scalar" | "enum" | "message" }): FieldEncoder {
  const value = singularValue(field);
  const name = field.localName;
  if (field.oneof) {
    const oneof = field.oneof.localName;
    return {
      size(m, l) {
        const o = (m as Rec)[oneof] as { case: unknown; value: unknown };
        return o.case === name ? value.size(o.value, l) : 0;
      },
      write(m, buf, pos, l) {
        const o = (m as Rec)[oneof] as { case: unknown; value: unknown };
        return o.case === name ? value.write(o.value, buf, pos, l) : pos;
      },
    };
  }
  if (field.presence !== IMPLICIT) {
    if (field.presence === LEGACY_REQUIRED) throw new Error(`${field} is required: not compiled`);
    const set = (m: Message) => (m as Rec)[name] !== undefined && hasOwn.call(m, name);
    return {
      size: (m, l) => (set(m) ? value.size((m as Rec)[name], l) : 0),
      write: (m, buf, pos, l) => (set(m) ? value.write((m as Rec)[name], buf, pos, l) : pos),
    };
  }
  const zero = isZero(field);
  return {
    size(m, l) {
      const v = (m as Rec)[name];
      return zero(v) ? 0 : value.size(v, l);
    },
    write(m, buf, pos, l) {
      const v = (m as Rec)[name];
      return zero(v) ? pos : value.write(v, buf, pos, l);
    },
  };
}

/** protobuf-es's zero test for an implicit-presence field (loose for 64-bit integers: 0n, "0" and 0 alike). */
function isZero(field: DescField & { fieldKind: "scalar" | "enum" | "message" }): (v: unknown) => boolean {
  if (field.fieldKind === "enum") {
    const zero = field.enum.values[0]!.number;
    return (v) => v === zero;
  }
  if (field.fieldKind === "message") return (v) => v === undefined;
  return scalarZeroTest(field.scalar);
}

/** Encodes one value of a field, its tag included: `size`/`write` take the value, not the message. */
interface ValueEncoder {
  size(value: unknown, lengths: Lengths): number;
  write(value: unknown, buf: Buffer, pos: number, lengths: Lengths): number;
}

function singularValue(field: DescField & { fieldKind: "scalar" | "enum" | "message" }): ValueEncoder {
  if (field.fieldKind === "message") {
    const child = childEncoder(field.message, field.number);
    if (!field.oneof && isWrapperDesc(field.message)) return wrapped(field.message, child);
    return child;
  }
  const type = field.fieldKind === "enum" ? ScalarType.INT32 : field.scalar;
  const tag = tagBytes(field.number, wireTypeOf(type));
  const scalar = SCALARS[type];
  return {
    size: (v, l) => tag.length + scalar.size(v, l),
    write: (v, buf, pos, l) => scalar.write(v, buf, putBytes(buf, pos, tag), l),
  };
}

/** A message value as a length-delimited field: tag, length, body. */
function childEncoder(desc: DescMessage, number: number): ValueEncoder {
  const tag = tagBytes(number, 2);
  let encoder: MessageEncoder | undefined;
  const get = () => (encoder ??= messageEncoder(desc));
  return {
    size(v, l) {
      const index = l.list.length;
      l.list.push(0);
      const n = get().size(v as Message, l);
      l.list[index] = n;
      return tag.length + varintSize(n) + n;
    },
    write(v, buf, pos, l) {
      pos = writeVarint(buf, putBytes(buf, pos, tag), l.list[l.next++]!);
      return get().write(v as Message, buf, pos, l);
    },
  };
}

/** A singular wrapper field (google.protobuf.Int32Value and kin) holds the bare scalar; on the wire it is the wrapper message. */
function wrapped(desc: DescMessage, child: ValueEncoder): ValueEncoder {
  const typeName = desc.typeName;
  const box = (v: unknown) => ({ $typeName: typeName, value: v }) as Message;
  return { size: (v, l) => child.size(box(v), l), write: (v, buf, pos, l) => child.write(box(v), buf, pos, l) };
}

function messageList(field: DescField & { fieldKind: "list"; listKind: "message" }): FieldEncoder {
  const name = field.localName;
  const child = childEncoder(field.message, field.number);
  return {
    size(m, l) {
      const items = (m as Rec)[name] as unknown[];
      let size = 0;
      for (let i = 0; i < items.length; i++) size += child.size(items[i], l);
      return size;
    },
    write(m, buf, pos, l) {
      const items = (m as Rec)[name] as unknown[];
      for (let i = 0; i < items.length; i++) pos = child.write(items[i], buf, pos, l);
      return pos;
    },
  };
}

function scalarList(field: DescField & { fieldKind: "list" }, type: ScalarType): FieldEncoder {
  const name = field.localName;
  const scalar = SCALARS[type];
  if (field.packed) {
    const tag = tagBytes(field.number, 2);
    return {
      size(m, l) {
        const items = (m as Rec)[name] as unknown[];
        if (items.length === 0) return 0;
        const index = l.list.length;
        l.list.push(0);
        let n = 0;
        for (let i = 0; i < items.length; i++) n += scalar.size(items[i], l);
        l.list[index] = n;
        return tag.length + varintSize(n) + n;
      },
      write(m, buf, pos, l) {
        const items = (m as Rec)[name] as unknown[];
        if (items.length === 0) return pos;
        pos = writeVarint(buf, putBytes(buf, pos, tag), l.list[l.next++]!);
        for (let i = 0; i < items.length; i++) pos = scalar.write(items[i], buf, pos, l);
        return pos;
      },
    };
  }
  const tag = tagBytes(field.number, wireTypeOf(type));
  return {
    size(m, l) {
      const items = (m as Rec)[name] as unknown[];
      let size = 0;
      for (let i = 0; i < items.length; i++) size += tag.length + scalar.size(items[i], l);
      return size;
    },
    write(m, buf, pos, l) {
      const items = (m as Rec)[name] as unknown[];
      for (let i = 0; i < items.length; i++) pos = scalar.write(items[i], buf, putBytes(buf, pos, tag), l);
      return pos;
    },
  };
}

/** Map entries in `Object.keys` order, key and value always written (as protobuf-es does). */
function mapField(field: DescField & { fieldKind: "map" }): FieldEncoder {
  const name = field.localName;
  const tag = tagBytes(field.number, 2);
  const keyTag = tagBytes(1, wireTypeOf(field.mapKey));
  const keyScalar = SCALARS[field.mapKey];
  const toKey = keyConverter(field.mapKey);
  let value: ValueEncoder;
  if (field.mapKind === "message") value = childEncoder(field.message, 2);
  else {
    const type = field.mapKind === "enum" ? ScalarType.INT32 : field.scalar;
    const valueTag = tagBytes(2, wireTypeOf(type));
    const scalar = SCALARS[type];
    value = {
      size: (v, l) => valueTag.length + scalar.size(v, l),
      write: (v, buf, pos, l) => scalar.write(v, buf, putBytes(buf, pos, valueTag), l),
    };
  }
  return {
    size(m, l) {
      const record = (m as Rec)[name] as Rec;
      let size = 0;
      for (const key of Object.keys(record)) {
        const index = l.list.length;
        l.list.push(0);
        const n = keyTag.length + keyScalar.size(toKey(key), l) + value.size(record[key], l);
        l.list[index] = n;
        size += tag.length + varintSize(n) + n;
      }
      return size;
    },
    write(m, buf, pos, l) {
      const record = (m as Rec)[name] as Rec;
      for (const key of Object.keys(record)) {
        pos = writeVarint(buf, putBytes(buf, pos, tag), l.list[l.next++]!);
        pos = keyScalar.write(toKey(key), buf, putBytes(buf, pos, keyTag), l);
        pos = value.write(record[key], buf, pos, l);
      }
      return pos;
    },
  };
}

/** Map keys are object keys, so strings: back to their scalar type as protobuf-es converts them; anything else falls back. */
function keyConverter(type: ScalarType): (key: string) => unknown {
  switch (type) {
    case ScalarType.STRING:
      return (key) => key;
    case ScalarType.BOOL:
      return (key) => (key === "true" ? true : key === "false" ? false : fallback());
    case ScalarType.INT64:
    case ScalarType.UINT64:
    case ScalarType.FIXED64:
    case ScalarType.SFIXED64:
    case ScalarType.SINT64:
      return (key) => (INTEGER.test(key) ? BigInt(key) : fallback());
    default:
      return (key) => (INTEGER.test(key) ? Number(key) : fallback());
  }
}

const INTEGER = /^-?[0-9]+$/;

function fallback(): never {
  throw FALLBACK;
}

// ---------------------------------------------------------------------------------------------------
// Scalars: `size` checks the value is one protobuf-es writes as it is, `write` writes it (no tag).

interface ScalarEncoder {
  size(value: unknown, lengths: Lengths): number;
  write(value: unknown, buf: Buffer, pos: number, lengths: Lengths): number;
}

const INT32: ScalarEncoder = {
  size(v) {
    if (typeof v !== "number" || (v | 0) !== v) throw FALLBACK;
    return v < 0 ? 10 : varintSize(v);
  },
  write: (v, buf, pos) => ((v as number) < 0 ? writeNegative(buf, pos, v as number) : writeVarint(buf, pos, v as number)),
};

const UINT32: ScalarEncoder = {
  size(v) {
    if (typeof v !== "number" || v >>> 0 !== v) throw FALLBACK;
    return varintSize(v);
  },
  write: (v, buf, pos) => writeVarint(buf, pos, v as number),
};

const SINT32: ScalarEncoder = {
  size(v) {
    if (typeof v !== "number" || (v | 0) !== v) throw FALLBACK;
    return varintSize(((v << 1) ^ (v >> 31)) >>> 0);
  },
  write: (v, buf, pos) => writeVarint(buf, pos, (((v as number) << 1) ^ ((v as number) >> 31)) >>> 0),
};

const BOOL: ScalarEncoder = {
  size(v) {
    if (typeof v !== "boolean") throw FALLBACK;
    return 1;
  },
  write(v, buf, pos) {
    buf[pos] = v ? 1 : 0;
    return pos + 1;
  },
};

function fixed32(signed: boolean): ScalarEncoder {
  return {
    size(v) {
      if (typeof v !== "number" || (signed ? (v | 0) !== v : v >>> 0 !== v)) throw FALLBACK;
      return 4;
    },
    write(v, buf, pos) {
      const n = v as number;
      buf[pos] = n;
      buf[pos + 1] = n >>> 8;
      buf[pos + 2] = n >>> 16;
      buf[pos + 3] = n >>> 24;
      return pos + 4;
    },
  };
}

const FLOAT: ScalarEncoder = {
  size(v) {
    if (typeof v !== "number" || (Number.isFinite(v) && !Number.isFinite(Math.fround(v)))) throw FALLBACK;
    return 4;
  },
  write: (v, buf, pos) => buf.writeFloatLE(v as number, pos),
};

const DOUBLE: ScalarEncoder = {
  size(v) {
    if (typeof v !== "number") throw FALLBACK;
    return 8;
  },
  write: (v, buf, pos) => buf.writeDoubleLE(v as number, pos),
};

const MAX_INT64 = 0x7fffffffffffffffn;
const MIN_INT64 = -0x8000000000000000n;
const MAX_UINT64 = 0xffffffffffffffffn;

/** A 64-bit integer as protobuf-es takes it (bigint, or a decimal string under jstype = JS_STRING), as the uint64 bit pattern. */
function bits64(v: unknown, signed: boolean): bigint {
  let n: bigint;
  if (typeof v === "bigint") n = v;
  else if (typeof v === "string" && INTEGER.test(v)) n = BigInt(v);
  else throw FALLBACK;
  if (signed ? n > MAX_INT64 || n < MIN_INT64 : n > MAX_UINT64 || n < 0n) throw FALLBACK;
  return BigInt.asUintN(64, n);
}

function varint64(signed: boolean, zigzag: boolean): ScalarEncoder {
  const bits = zigzag
    ? (v: unknown) => BigInt.asUintN(64, (bits64(v, true) << 1n) ^ (BigInt.asIntN(64, bits64(v, true)) >> 63n))
    : (v: unknown) => bits64(v, signed);
  // The common case, a small non-negative bigint (a Timestamp's seconds), without bigint arithmetic.
  const small = (v: unknown): v is bigint => !zigzag && typeof v === "bigint" && v >= 0n && v < 0x100000000n;
  return {
    size: (v) => (small(v) ? varintSize(Number(v)) : varint64Size(bits(v))),
    write: (v, buf, pos) => (small(v) ? writeVarint(buf, pos, Number(v)) : writeVarint64(buf, pos, bits(v))),
  };
}

function fixed64(signed: boolean): ScalarEncoder {
  return {
    size(v) {
      bits64(v, signed);
      return 8;
    },
    write(v, buf, pos) {
      buf.writeBigUInt64LE(bits64(v, signed), pos);
      return pos + 8;
    },
  };
}

const STRING: ScalarEncoder = {
  size(v, l) {
    if (typeof v !== "string") throw FALLBACK;
    const n = utf8Length(v);
    l.list.push(n);
    return varintSize(n) + n;
  },
  write(v, buf, pos, l) {
    const s = v as string;
    const n = l.list[l.next++]!;
    pos = writeVarint(buf, pos, n);
    if (n === s.length && n < 64) {
      for (let i = 0; i < n; i++) buf[pos + i] = s.charCodeAt(i);
    } else if (n === s.length) buf.write(s, pos, n, "latin1");
    else buf.write(s, pos, n, "utf8");
    return pos + n;
  },
};

const BYTES: ScalarEncoder = {
  size(v) {
    if (!(v instanceof Uint8Array)) throw FALLBACK;
    return varintSize(v.byteLength) + v.byteLength;
  },
  write(v, buf, pos) {
    const b = v as Uint8Array;
    pos = writeVarint(buf, pos, b.byteLength);
    buf.set(b, pos);
    return pos + b.byteLength;
  },
};

const SCALARS: Record<ScalarType, ScalarEncoder> = {
  [ScalarType.DOUBLE]: DOUBLE,
  [ScalarType.FLOAT]: FLOAT,
  [ScalarType.INT64]: varint64(true, false),
  [ScalarType.UINT64]: varint64(false, false),
  [ScalarType.INT32]: INT32,
  [ScalarType.FIXED64]: fixed64(false),
  [ScalarType.FIXED32]: fixed32(false),
  [ScalarType.BOOL]: BOOL,
  [ScalarType.STRING]: STRING,
  [ScalarType.BYTES]: BYTES,
  [ScalarType.UINT32]: UINT32,
  [ScalarType.SFIXED32]: fixed32(true),
  [ScalarType.SFIXED64]: fixed64(true),
  [ScalarType.SINT32]: SINT32,
  [ScalarType.SINT64]: varint64(true, true),
};

// ---------------------------------------------------------------------------------------------------
// Wire primitives.

function tagBytes(number: number, wireType: number): Uint8Array {
  const tag = ((number << 3) | wireType) >>> 0;
  const bytes = Buffer.alloc(varintSize(tag));
  writeVarint(bytes, 0, tag);
  return bytes;
}

function putBytes(buf: Buffer, pos: number, bytes: Uint8Array): number {
  for (let i = 0; i < bytes.length; i++) buf[pos + i] = bytes[i]!;
  return pos + bytes.length;
}

export function varintSize(v: number): number {
  return v < 0x80 ? 1 : v < 0x4000 ? 2 : v < 0x200000 ? 3 : v < 0x10000000 ? 4 : 5;
}

/** An unsigned 32-bit varint. */
export function writeVarint(buf: Uint8Array, pos: number, v: number): number {
  while (v > 0x7f) {
    buf[pos++] = (v & 0x7f) | 0x80;
    v >>>= 7;
  }
  buf[pos++] = v;
  return pos;
}

/** A negative int32: sign-extended to 64 bits, always 10 bytes. */
function writeNegative(buf: Buffer, pos: number, v: number): number {
  for (let i = 0; i < 9; i++) {
    buf[pos++] = (v & 0x7f) | 0x80;
    v >>= 7;
  }
  buf[pos++] = 1;
  return pos;
}

function varint64Size(v: bigint): number {
  if (v < 0x100000000n) return varintSize(Number(v));
  let n = 1;
  while (v > 0x7fn) {
    v >>= 7n;
    n++;
  }
  return n;
}

function writeVarint64(buf: Buffer, pos: number, v: bigint): number {
  if (v < 0x100000000n) return writeVarint(buf, pos, Number(v));
  while (v > 0x7fn) {
    buf[pos++] = Number(v & 0x7fn) | 0x80;
    v >>= 7n;
  }
  buf[pos++] = Number(v);
  return pos;
}

/** UTF-8 length as TextEncoder writes it: a lone surrogate becomes U+FFFD (3 bytes). */
function utf8Length(s: string): number {
  const length = s.length;
  if (length > 64) return Buffer.byteLength(s, "utf8");
  let n = length;
  for (let i = 0; i < length; i++) {
    const c = s.charCodeAt(i);
    if (c < 0x80) continue;
    if (c < 0x800) n += 1;
    else if (c >= 0xd800 && c <= 0xdbff && i + 1 < length && (s.charCodeAt(i + 1) & 0xfc00) === 0xdc00) {
      n += 2;
      i++;
    } else n += 2;
  }
  return n;
}
