import assert from "node:assert/strict";
import { describe, test } from "node:test";
import {
  create,
  type DescField,
  type DescMessage,
  equals,
  fromBinary,
  type Message,
  protoInt64,
  ScalarType,
  toBinary,
} from "@bufbuild/protobuf";
import * as wkt from "@bufbuild/protobuf/wkt";
import { messagesOf } from "../../../test/framework/support/random.js";
import { file_codec_v1_kinds, MapsSchema, ScalarsSchema, SparseSchema, WithStructSchema } from "../../../test/gen/codec/v1/kinds_pb.js";
import { file_codec_v1_legacy, LegacySchema } from "../../../test/gen/codec/v1/legacy_pb.js";
import { file_fixture_v1_fixture } from "../../../test/gen/fixture/v1/fixture_pb.js";
import { binaryCodec, compiledDecode, compiledEncode } from "./codec.js";
import { compilable } from "./compilable.js";

// ---------------------------------------------------------------------------------------------------
// Random messages of any type, from the descriptor alone (seeded: a failure names its seed).

function rng(seed: number): () => number {
  return () => {
    seed = (seed + 0x6d2b79f5) | 0;
    let t = Math.imul(seed ^ (seed >>> 15), 1 | seed);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

const STRINGS = [
  "",
  "a",
  "The quick brown fox jumps over the lazy dog",
  "héllo wörld",
  "日本語",
  "emoji 😀 pair",
  "\uFEFFbom",
  "x".repeat(200),
  "ü".repeat(100),
  "\u0000nul",
  "__proto__",
  "lone \uD800 surrogate",
  "lone low \uDC00",
];
const DOUBLES = [
  0,
  -0,
  1,
  -1,
  0.5,
  Number.NaN,
  Number.POSITIVE_INFINITY,
  Number.NEGATIVE_INFINITY,
  Number.MAX_VALUE,
  Number.MIN_VALUE,
  1e300,
  -123456.789,
];
const INT32 = [0, 1, -1, 127, 128, 300, 16384, 2 ** 21, 2 ** 28, 2147483647, -2147483648];
const UINT32 = [0, 1, 127, 128, 16383, 16384, 2 ** 28 - 1, 2 ** 28, 4294967295];
const INT64 = [0n, 1n, -1n, 127n, 128n, 4294967295n, 4294967296n, 9007199254740993n, 9223372036854775807n, -9223372036854775808n];
const UINT64 = [0n, 1n, 127n, 128n, 4294967296n, 18446744073709551615n];

class Gen {
  readonly #r: () => number;
  constructor(seed: number) {
    this.#r = rng(seed);
  }
  int(n: number): number {
    return Math.floor(this.#r() * n);
  }
  chance(p: number): boolean {
    return this.#r() < p;
  }
  pick<T>(items: readonly T[]): T {
    return items[this.int(items.length)]!;
  }
  scalar(type: ScalarType, longAsString = false): unknown {
    const random = this.chance(0.5);
    switch (type) {
      case ScalarType.DOUBLE:
        return random ? (this.#r() - 0.5) * 10 ** this.int(20) : this.pick(DOUBLES);
      case ScalarType.FLOAT:
        return random
          ? Math.fround((this.#r() - 0.5) * 1000)
          : this.pick([0, -0, 1.5, Number.NaN, Number.POSITIVE_INFINITY, Math.fround(3.4e38)]);
      case ScalarType.INT32:
      case ScalarType.SINT32:
      case ScalarType.SFIXED32:
        return random ? this.int(2 ** 32) | 0 : this.pick(INT32);
      case ScalarType.UINT32:
      case ScalarType.FIXED32:
        return random ? this.int(2 ** 32) : this.pick(UINT32);
      case ScalarType.INT64:
      case ScalarType.SINT64:
      case ScalarType.SFIXED64: {
        const v = random
          ? BigInt.asIntN(64, BigInt(this.int(2 ** 32)) * BigInt(this.int(2 ** 32)) * (this.chance(0.5) ? 1n : -1n))
          : this.pick(INT64);
        return longAsString ? String(v) : v;
      }
      case ScalarType.UINT64:
      case ScalarType.FIXED64: {
        const v = random ? BigInt(this.int(2 ** 32)) * BigInt(this.int(2 ** 32)) : this.pick(UINT64);
        return longAsString ? String(v) : v;
      }
      case ScalarType.BOOL:
        return this.chance(0.5);
      case ScalarType.STRING:
        return random
          ? String.fromCharCode(...Array.from({ length: this.int(40) }, () => (this.chance(0.8) ? 32 + this.int(95) : this.int(0xffff))))
          : this.pick(STRINGS);
      case ScalarType.BYTES:
        return Uint8Array.from({ length: this.pick([0, 1, 5, 200]) }, () => this.int(256));
    }
  }
  message(desc: DescMessage, depth = 0): Message {
    const init: Record<string, unknown> = {};
    for (const member of desc.members) {
      if (member.kind === "oneof") {
        if (this.chance(0.3)) continue;
        const field = this.pick(member.fields);
        const value = this.value(field, depth, true);
        if (value !== undefined) init[member.localName] = { case: field.localName, value };
        continue;
      }
      if (member.fieldKind === "list") {
        init[member.localName] = Array.from({ length: this.pick([0, 0, 1, 3]) }, () => this.item(member, depth));
      } else if (member.fieldKind === "map") {
        const record: Record<string, unknown> = {};
        for (let i = this.pick([0, 0, 1, 3]); i > 0; i--) record[String(this.scalar(member.mapKey))] = this.item(member, depth);
        init[member.localName] = record;
      } else if (member.presence === 2 && this.chance(0.3)) {
        // implicit presence: sometimes the zero value, left out on the wire
      } else if (this.chance(0.8)) {
        const value = this.value(member, depth, false);
        if (value !== undefined) init[member.localName] = value;
      }
    }
    const message = create(desc, init);
    if (this.chance(0.15)) {
      // An unknown field (number 99999 is in no test message): kept by decode, written back by encode.
      const data = this.pick([new Uint8Array([0x96, 0x01]), new Uint8Array([3, 0x61, 0x62, 0x63]), new Uint8Array([1, 2, 3, 4])]);
      message.$unknown = [{ no: 99999, wireType: data.length === 2 ? 0 : data.length === 4 && data[0] === 1 ? 5 : 2, data }];
    }
    return message;
  }
  value(field: DescField, depth: number, inOneof: boolean): unknown {
    switch (field.fieldKind) {
      case "scalar":
        return this.scalar(field.scalar, field.longAsString);
      case "enum":
        return this.chance(0.8) ? this.pick(field.enum.values).number : this.int(1000);
      case "message":
        if (depth > 3) return undefined;
        if (!inOneof && wkt.isWrapperDesc(field.message)) return this.scalar(field.message.fields[0]!.scalar!);
        return this.message(field.message, depth + 1);
      default:
        return undefined;
    }
  }
  item(field: DescField & { fieldKind: "list" | "map" }, depth: number): unknown {
    if (field.message) return depth > 3 ? create(field.message) : this.message(field.message, depth + 1);
    if (field.enum) return this.pick(field.enum.values).number;
    return this.scalar(field.scalar!, field.fieldKind === "list" && field.longAsString);
  }
}

const WKT_FILES = [
  wkt.file_google_protobuf_any,
  wkt.file_google_protobuf_duration,
  wkt.file_google_protobuf_empty,
  wkt.file_google_protobuf_field_mask,
  wkt.file_google_protobuf_struct,
  wkt.file_google_protobuf_timestamp,
  wkt.file_google_protobuf_wrappers,
];
const TYPES = messagesOf(file_fixture_v1_fixture, file_codec_v1_kinds, ...WKT_FILES);

/** decode's outcome (message or error) is protobuf-es's. */
function assertSameDecode(desc: DescMessage, bytes: Uint8Array, note: string): void {
  let expected: Message | undefined;
  let error: unknown;
  try {
    expected = fromBinary(desc, bytes);
  } catch (e) {
    error = e;
  }
  if (error === undefined) {
    const actual = binaryCodec(desc).decode(bytes);
    assert.deepStrictEqual(actual, expected, note);
    // equals() is false for two NaNs: it must say of the two what it says of two protobuf-es decodings.
    assert.equal(equals(desc, actual, expected!), equals(desc, fromBinary(desc, bytes), expected!), note);
  } else {
    assert.throws(() => binaryCodec(desc).decode(bytes), { name: (error as Error).name, message: (error as Error).message }, note);
  }
}

describe("the compiled binary codec", () => {
  test("compiles every proto3 type of the fixture, the test kinds and the well-known types but Struct holders", () => {
    for (const desc of TYPES) assert.equal(compilable(desc), desc !== WithStructSchema, desc.typeName);
    assert.equal(compilable(LegacySchema), false);
    assert.equal(messagesOf(file_codec_v1_legacy).filter((d) => compilable(d)).length, 0);
  });

  test("encodes random messages of every type to exactly protobuf-es's bytes, and decodes them to protobuf-es's messages, without falling back", () => {
    for (const desc of TYPES) {
      if (!compilable(desc)) continue;
      for (let seed = 1; seed <= 150; seed++) {
        const note = `${desc.typeName} seed ${seed}`;
        const message = new Gen(seed * 7919 + desc.typeName.length).message(desc);
        const bytes = toBinary(desc, message);
        assert.deepEqual(new Uint8Array(compiledEncode(desc, message)), bytes, note);
        const encoded = binaryCodec(desc).encode(message);
        assert.ok(Buffer.isBuffer(encoded), note);
        assert.deepEqual(new Uint8Array(encoded), bytes, note);
        const decoded = compiledDecode(desc, bytes);
        const expected = fromBinary(desc, bytes);
        assert.deepStrictEqual(decoded, expected, note);
        assert.equal(equals(desc, decoded, expected), equals(desc, fromBinary(desc, bytes), expected), note);
        // From a Buffer too, as grpc-js hands them over: bytes fields and unknown fields are views of it, as in protobuf-es.
        assert.deepStrictEqual(compiledDecode(desc, Buffer.from(bytes)), fromBinary(desc, Buffer.from(bytes)), note);
      }
    }
  });

  test("decodes two messages one after the other as protobuf-es merges them: last scalar wins, lists append, messages merge", () => {
    for (const desc of TYPES) {
      if (!compilable(desc)) continue;
      for (let seed = 1; seed <= 60; seed++) {
        const gen = new Gen(seed * 104729 + desc.typeName.length);
        const both = Buffer.concat([toBinary(desc, gen.message(desc)), toBinary(desc, gen.message(desc))]);
        assert.deepStrictEqual(compiledDecode(desc, both), fromBinary(desc, both), `${desc.typeName} seed ${seed}`);
      }
    }
  });

  test("decoded messages start as protobuf-es's create() makes them, and never share a list, map or oneof", () => {
    for (const desc of TYPES) {
      if (!compilable(desc)) continue;
      const a = compiledDecode(desc, new Uint8Array(0)) as unknown as Record<string, unknown>;
      const b = compiledDecode(desc, new Uint8Array(0)) as unknown as Record<string, unknown>;
      assert.deepStrictEqual(compiledDecode(desc, new Uint8Array(0)), create(desc), desc.typeName);
      for (const member of desc.members) {
        const name = member.localName;
        if (member.kind === "oneof" || member.fieldKind === "list" || member.fieldKind === "map")
          assert.notEqual(a[name], b[name], `${desc.typeName}.${name}`);
      }
    }
  });

  test("a map key __proto__ from the wire is an entry like any other, never the prototype", () => {
    const message = create(MapsSchema);
    Object.defineProperty(message.stringString, "__proto__", { value: "polluted?", enumerable: true, writable: true, configurable: true });
    const bytes = toBinary(MapsSchema, message);
    assert.deepEqual(new Uint8Array(compiledEncode(MapsSchema, message)), bytes);
    const decoded = compiledDecode(MapsSchema, bytes) as typeof message;
    assert.deepStrictEqual(decoded, fromBinary(MapsSchema, bytes));
    assert.equal(Object.getPrototypeOf(decoded.stringString), Object.prototype);
    assert.deepEqual(Object.keys(decoded.stringString), ["__proto__"]);
    assert.equal(({} as Record<string, unknown>).polluted, undefined);
  });

  test("a NaN with a payload, -0 and infinities read from the wire are written back with protobuf-es's bits", () => {
    const inputs = [
      [0x09, 1, 0, 0, 0, 0, 0, 0xf8, 0xff], // double NaN with a payload
      [0x09, 0, 0, 0, 0, 0, 0, 0xf0, 0x7f], // double +Infinity
      [0x09, 0, 0, 0, 0, 0, 0, 0, 0x80], // double -0
      [0x15, 1, 0, 0xc0, 0xff], // float NaN with a payload
      [0x15, 0, 0, 0x80, 0xff], // float -Infinity
    ];
    for (const input of inputs) {
      const bytes = new Uint8Array(input);
      const decoded = compiledDecode(ScalarsSchema, bytes);
      assert.deepStrictEqual(decoded, fromBinary(ScalarsSchema, bytes));
      assert.deepEqual(new Uint8Array(compiledEncode(ScalarsSchema, decoded)), toBinary(ScalarsSchema, fromBinary(ScalarsSchema, bytes)));
    }
  });

  test("decodes repeated scalars packed and unpacked alike", () => {
    // Repeated.int32_values (5, packed by default) sent unpacked, and Repeated.unpacked_int32 (20) sent packed.
    const desc = TYPES.find((d) => d.typeName === "codec.v1.Repeated")!;
    const bytes = new Uint8Array([0x28, 0x01, 0x28, 0x7f, 0xa2, 0x01, 0x02, 0x05, 0x06, 0xa0, 0x01, 0x07]);
    const decoded = compiledDecode(desc, bytes) as unknown as { int32Values: number[]; unpackedInt32: number[] };
    assert.deepEqual(decoded.int32Values, [1, 127]);
    assert.deepEqual(decoded.unpackedInt32, [5, 6, 7]);
    assert.deepStrictEqual(decoded, fromBinary(desc, bytes));
  });

  test("field numbers past the dense table and up to the largest decode and encode as protobuf-es's", () => {
    const message = create(SparseSchema, { low: "a", high: "b", highest: -5 });
    const bytes = toBinary(SparseSchema, message);
    assert.deepEqual(new Uint8Array(compiledEncode(SparseSchema, message)), bytes);
    assert.deepStrictEqual(compiledDecode(SparseSchema, bytes), fromBinary(SparseSchema, bytes));
  });

  test("malformed input gives protobuf-es's error or message: truncated varint, bad wire type, length past the end, invalid UTF-8, groups, end past the message", () => {
    const cases: [string, number[]][] = [
      ["truncated varint", [0x28, 0xff]],
      ["truncated tag", [0xff]],
      ["overlong tag", [0xff, 0xff, 0xff, 0xff, 0xff, 0x01]],
      ["field number 0", [0x00, 0x01]],
      ["wire type 7", [0x0f, 0x01]],
      ["wire type 6", [0x0e]],
      ["string field sent as varint", [0x48, 0x01]],
      ["length past the end", [0x4a, 0x05, 0x61]],
      ["invalid UTF-8", [0x4a, 0x02, 0xc3, 0x28]],
      ["overlong UTF-8", [0x4a, 0x02, 0xc0, 0xaf]],
      ["UTF-8 surrogate", [0x4a, 0x03, 0xed, 0xa0, 0x80]],
      ["group for an unknown field", [0xfb, 0x06, 0x08, 0x01, 0xfc, 0x06]],
      ["group for a known field", [0x0b, 0x0c]],
      ["unterminated group", [0xfb, 0x06, 0x08, 0x01]],
      ["end group alone", [0x0c]],
      ["truncated double", [0x09, 0x00, 0x00]],
      ["truncated fixed32", [0x3d, 0x00]],
      ["11-byte varint in an unknown field", [0xf8, 0x06, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01]],
      ["10-byte int32", [0x28, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01]],
      ["bool as a long varint", [0x40, 0x80, 0x80, 0x01]],
    ];
    for (const [note, bytes] of cases) assertSameDecode(ScalarsSchema, new Uint8Array(bytes), note);
    // A nested message whose last field reads past its own end.
    const optionals = TYPES.find((d) => d.typeName === "codec.v1.Optionals")!;
    assertSameDecode(optionals, new Uint8Array([0xf2, 0x01, 0x02, 0x4a, 0x03, 0x61, 0x62, 0x63]), "field past its message's end");
    // Nested deeper than protobuf-es's recursion limit.
    const node = TYPES.find((d) => d.typeName === "codec.v1.Node")!;
    let deep = new Uint8Array(0);
    for (let i = 0; i < 120; i++) deep = Uint8Array.from([0x12, ...varint(deep.length), ...deep]);
    assertSameDecode(node, deep, "recursion limit");
  });

  test("random corruptions of valid messages decode to protobuf-es's message or fail with its error", () => {
    for (const desc of TYPES) {
      if (!compilable(desc)) continue;
      const gen = new Gen(desc.typeName.length * 31);
      for (let i = 0; i < 40; i++) {
        const bytes = toBinary(desc, gen.message(desc));
        if (bytes.length === 0) continue;
        assertSameDecode(desc, bytes.subarray(0, gen.int(bytes.length)), `${desc.typeName} truncated #${i}`);
        const flipped = bytes.slice();
        const at = gen.int(bytes.length);
        flipped[at] = flipped[at]! ^ (1 << gen.int(8));
        assertSameDecode(desc, flipped, `${desc.typeName} flipped #${i}`);
      }
    }
  });

  test("values protobuf-es coerces or rejects get its bytes or its error", () => {
    const codec = binaryCodec(ScalarsSchema);
    const cases: [string, Record<string, unknown>][] = [
      ["int32 as a string", { int32Value: "12" }],
      ["int32 out of range", { int32Value: 2 ** 31 }],
      ["fractional int32", { int32Value: 1.5 }],
      ["negative uint32", { uint32Value: -1 }],
      ["float beyond float32", { floatValue: 1e39 }],
      ["int64 as a number", { int64Value: 5 }],
      ["int64 out of range", { int64Value: 2n ** 63n }],
      ["uint64 negative", { uint64Value: -1n }],
      ["int64 string not a number", { int64String: "12x" }],
      ["string field holding a number", { stringValue: 42 }],
      ["bytes field holding a string", { bytesValue: "abc" }],
      ["bool field holding a number", { boolValue: 1 }],
    ];
    for (const [note, init] of cases) {
      const message = Object.assign(create(ScalarsSchema), init);
      let expected: Uint8Array | undefined;
      let error: Error | undefined;
      try {
        expected = toBinary(ScalarsSchema, message);
      } catch (e) {
        error = e as Error;
      }
      if (error) assert.throws(() => codec.encode(message), { message: error.message }, note);
      else assert.deepEqual(new Uint8Array(codec.encode(message)), expected, note);
    }
    // A message of another type in a message field: protobuf-es's ForeignFieldError.
    const optionals = TYPES.find((d) => d.typeName === "codec.v1.Optionals")!;
    const foreign = Object.assign(create(optionals), { messageValue: create(SparseSchema) });
    assert.throws(() => toBinary(optionals, foreign), /cannot use/);
    assert.throws(() => binaryCodec(optionals).encode(foreign), /cannot use/);
  });

  test("types it does not compile (proto2 groups, required fields, extensions; Struct fields) are protobuf-es's, both ways", () => {
    const legacy = create(LegacySchema, { id: 7, name: "n", closed: 1, item: { label: "l" } });
    const bytes = toBinary(LegacySchema, legacy);
    assert.deepEqual(new Uint8Array(binaryCodec(LegacySchema).encode(legacy)), bytes);
    assert.deepStrictEqual(binaryCodec(LegacySchema).decode(bytes), fromBinary(LegacySchema, bytes));
    assert.throws(() => binaryCodec(LegacySchema).encode(create(LegacySchema)), /required field not set/);
    const withStruct = create(WithStructSchema, { struct: { a: 1, b: [true, null] }, name: "s" });
    const structBytes = toBinary(WithStructSchema, withStruct);
    assert.deepEqual(new Uint8Array(binaryCodec(WithStructSchema).encode(withStruct)), structBytes);
    assert.deepStrictEqual(binaryCodec(WithStructSchema).decode(structBytes), fromBinary(WithStructSchema, structBytes));
  });

  test("64-bit values decode as protobuf-es's local type: bigint, or a string under jstype = JS_STRING", () => {
    const message = create(ScalarsSchema, { int64Value: -5n, int64String: "-5", uint64String: "18446744073709551615" });
    const decoded = compiledDecode(ScalarsSchema, toBinary(ScalarsSchema, message)) as typeof message;
    assert.equal(decoded.int64Value, protoInt64.parse(-5));
    assert.equal(decoded.int64String, "-5");
    assert.equal(decoded.uint64String, "18446744073709551615");
  });
});

function varint(n: number): number[] {
  const out: number[] = [];
  while (n > 0x7f) {
    out.push((n & 0x7f) | 0x80);
    n >>>= 7;
  }
  out.push(n);
  return out;
}
