import assert from "node:assert/strict";
import { describe, test } from "node:test";
import {
  create,
  createFileRegistry,
  type DescField,
  type DescMessage,
  fromJsonString,
  type Message,
  ScalarType,
  toBinary,
  toJsonString,
} from "@bufbuild/protobuf";
import {
  FieldDescriptorProto_Label,
  FieldDescriptorProto_Type,
  FileDescriptorProtoSchema,
  file_google_protobuf_descriptor,
  TimestampSchema,
} from "@bufbuild/protobuf/wkt";
import { messagesOf, random } from "../../../test/framework/support/random.js";
import { EchoResponseSchema, file_fixture_v1_fixture } from "../../../test/gen/fixture/v1/fixture_pb.js";
import { BookSchema, file_gatewaytest_v1_library, type Genre, QueryRequestSchema } from "../../../test/gen/gatewaytest/v1/library_pb.js";
import { isCompiled, jsonWriter } from "./json-writer.js";

const OPTIONS = { alwaysEmitImplicit: true } as const;

type Random = ReturnType<typeof random>;

const STRINGS = [
  "",
  "a",
  'quo"te',
  "back\\slash",
  "line\nbreak\t",
  "\u0001\u001f",
  "\u2028\u2029",
  "é漢字😀",
  "\ud800",
  "</script>",
  "10",
  "2",
  "-1",
];
const DOUBLES = [0, -0, 1, -1.5, 0.1, 1e21, 1e-7, 5e-324, Number.MAX_VALUE, Number.NaN, Number.POSITIVE_INFINITY, Number.NEGATIVE_INFINITY];

function scalar(r: Random, type: ScalarType): unknown {
  switch (type) {
    case ScalarType.STRING:
      return r.pick(STRINGS);
    case ScalarType.BOOL:
      return r.next() < 0.5;
    case ScalarType.DOUBLE:
      return r.pick(DOUBLES);
    case ScalarType.FLOAT:
      return Math.fround(r.pick(DOUBLES));
    case ScalarType.BYTES:
      return Uint8Array.from({ length: r.int(6) }, () => r.int(256));
    case ScalarType.INT32:
    case ScalarType.SINT32:
    case ScalarType.SFIXED32:
      return r.pick([0, 1, -1, 2147483647, -2147483648, r.int(1000)]);
    case ScalarType.UINT32:
    case ScalarType.FIXED32:
      return r.pick([0, 1, 4294967295, r.int(1000)]);
    case ScalarType.UINT64:
    case ScalarType.FIXED64:
      return r.pick([0n, 1n, 18446744073709551615n, BigInt(r.int(1e9))]);
    default:
      return r.pick([0n, -1n, 9223372036854775807n, -9223372036854775808n, BigInt(r.int(1e9))]);
  }
}

/** An init value for a message field: protobuf-es keeps wrappers unboxed and Struct/Value as JSON. */
function messageValue(r: Random, desc: DescMessage, depth: number): unknown {
  switch (desc.typeName) {
    case "google.protobuf.Timestamp":
      return {
        seconds: r.pick([0n, -62135596800n, 253402300799n, BigInt(1_700_000_000 + r.int(100))]),
        nanos: r.pick([0, 1, 1000, 1_000_000, 123_456_789, 999_999_999]),
      };
    case "google.protobuf.Duration":
      return { seconds: BigInt(r.int(100)), nanos: r.pick([0, 500_000_000]) };
    case "google.protobuf.FieldMask":
      return { paths: r.pick([[], ["a_b"], ["x", "y.z"]]) };
    case "google.protobuf.Struct":
      return { a: 1, b: "x", c: [true, null] };
    case "google.protobuf.Value":
      return r.pick([1, "s", null, { k: [1] }]);
    case "google.protobuf.ListValue":
      return [1, "a", { b: false }];
  }
  if (desc.typeName.endsWith("Value") && desc.typeName.startsWith("google.protobuf.")) return scalar(r, desc.fields[0]!.scalar!);
  return fill(r, desc, depth + 1);
}

function fieldValue(r: Random, f: DescField, depth: number): unknown {
  const item = () => {
    const kind = f.fieldKind === "list" ? f.listKind : f.fieldKind === "map" ? f.mapKind : f.fieldKind;
    if (kind === "scalar") return scalar(r, (f as { scalar: ScalarType }).scalar);
    if (kind === "enum") return r.pick([...(f as { enum: { values: { number: number }[] } }).enum.values.map((v) => v.number), 99]);
    return messageValue(r, (f as { message: DescMessage }).message, depth);
  };
  if (f.fieldKind === "list") return Array.from({ length: r.int(4) }, item);
  if (f.fieldKind === "map") {
    const keys = f.mapKey === ScalarType.STRING ? STRINGS : f.mapKey === ScalarType.BOOL ? ["true", "false"] : ["10", "2", "-1", "0"];
    return Object.fromEntries(Array.from({ length: r.int(4) }, () => [r.pick(keys), item()]));
  }
  return item();
}

/** A message with a random subset of its fields set (one member of each oneof at most). */
function fill(r: Random, desc: DescMessage, depth = 0): Record<string, unknown> {
  const init: Record<string, unknown> = {};
  if (depth > 3) return init;
  for (const f of desc.fields) {
    if (r.next() < 0.35) continue;
    if (f.oneof) init[f.oneof.localName] = { case: f.localName, value: fieldValue(r, f, depth) };
    else init[f.localName] = fieldValue(r, f, depth);
  }
  return init;
}

/** Same bytes, or the same error, with implicit fields always written and (the Connect protocol's JSON) left out at zero. */
function assertSame(desc: DescMessage, message: Message): void {
  for (const emitImplicit of [true, false]) {
    let expected: string;
    try {
      expected = toJsonString(desc, message, emitImplicit ? OPTIONS : undefined);
    } catch (err) {
      assert.throws(() => jsonWriter(desc, emitImplicit)(message), { message: (err as Error).message });
      continue;
    }
    assert.equal(jsonWriter(desc, emitImplicit)(message), expected);
  }
}

describe("compiled JSON writer", () => {
  const types = messagesOf(file_fixture_v1_fixture, file_gatewaytest_v1_library);

  test("writes every message type of the test protos (the fixture service and the gateway tests) byte for byte as protobuf-es's toJsonString", () => {
    const r = random(16);
    for (const desc of types) {
      assertSame(desc, create(desc));
      for (let i = 0; i < 300; i++) assertSame(desc, create(desc, fill(r, desc)));
    }
  });

  test("int64, enums (unknown numbers too), maps with number-like keys, oneofs, optional fields, WKTs and json_name", () => {
    const r = random(7);
    const query = create(QueryRequestSchema, {
      int64Value: -9223372036854775808n,
      uint64Value: 18446744073709551615n,
      doubleValue: Number.NaN,
      floatValue: Math.fround(0.1),
      bytesValue: new Uint8Array([0, 255, 1]),
      enumValue: 99 as Genre,
      repeatedEnum: [1, 99 as Genre, 0],
      labels: { "10": "a", "2": "b", z: "c" },
      genreByNumber: { 10: 1, 2: 2, [-1]: 99 as Genre },
      choice: { case: "bookId", value: 5n },
      nested: { label: "x", deeper: { note: "y" } },
      timestamp: { seconds: 1_700_000_000n, nanos: 1000 },
      optionalString: "",
      renamed: "r",
      nestedList: [{}, { count: 3 }],
      int64Wrapper: 7n,
      structValue: { a: [1, "b"] },
    });
    assertSame(QueryRequestSchema, query);
    // A map key "__proto__" (an own key, as the JSON and binary readers store it) is written like any other.
    const book = fromJsonString(BookSchema, '{"labels":{"__proto__":"p","10":"a","b":"c"},"published":"2024-01-02T03:04:05.006Z"}');
    assert.ok(Object.hasOwn(book.labels, "__proto__"));
    assertSame(BookSchema, book);
    assert.match(jsonWriter(BookSchema)(book), /"labels":\{"10":"a","__proto__":"p","b":"c"\}/);
    for (let i = 0; i < 200; i++) assertSame(QueryRequestSchema, create(QueryRequestSchema, fill(r, QueryRequestSchema)));
  });

  test("a field whose json_name is an integer-like key comes first, as in protobuf-es's JSON object (JS key order)", () => {
    // Built at run time: buf would accept the proto, but such a json_name is rare enough not to ship one.
    const file = create(FileDescriptorProtoSchema, {
      name: "integer_keys.proto",
      package: "integerkeys",
      syntax: "proto3",
      messageType: [
        {
          name: "Keys",
          field: [
            {
              name: "alpha",
              number: 1,
              type: FieldDescriptorProto_Type.STRING,
              label: FieldDescriptorProto_Label.OPTIONAL,
              jsonName: "alpha",
            },
            { name: "beta", number: 2, type: FieldDescriptorProto_Type.STRING, label: FieldDescriptorProto_Label.OPTIONAL, jsonName: "0" },
            { name: "gamma", number: 3, type: FieldDescriptorProto_Type.INT32, label: FieldDescriptorProto_Label.OPTIONAL, jsonName: "12" },
            {
              name: "delta",
              number: 4,
              type: FieldDescriptorProto_Type.STRING,
              label: FieldDescriptorProto_Label.OPTIONAL,
              jsonName: "01",
            },
          ],
        },
        {
          name: "Outer",
          field: [
            {
              name: "name",
              number: 1,
              type: FieldDescriptorProto_Type.STRING,
              label: FieldDescriptorProto_Label.OPTIONAL,
              jsonName: "name",
            },
            {
              name: "keys",
              number: 2,
              type: FieldDescriptorProto_Type.MESSAGE,
              label: FieldDescriptorProto_Label.OPTIONAL,
              typeName: ".integerkeys.Keys",
              jsonName: "keys",
            },
          ],
        },
      ],
    });
    const registry = createFileRegistry(file, () => undefined);
    const keys = registry.getMessage("integerkeys.Keys")!;
    const outer = registry.getMessage("integerkeys.Outer")!;
    const message = create(keys, { alpha: "a", beta: "b", gamma: 3, delta: "d" } as never);
    assert.equal(jsonWriter(keys)(message), '{"0":"b","12":3,"alpha":"a","01":"d"}');
    assert.equal(jsonWriter(keys)(message), toJsonString(keys, message, OPTIONS));
    assert.equal(jsonWriter(keys, false)(message), toJsonString(keys, message));
    const wrapped = create(outer, { name: "n", keys: message } as never);
    assert.equal(jsonWriter(outer)(wrapped), toJsonString(outer, wrapped, OPTIONS));
  });

  test("the plain shapes are compiled; a type with other well-known types is left to protobuf-es", () => {
    assert.ok(isCompiled(EchoResponseSchema));
    assert.ok(isCompiled(BookSchema)); // int64, enum, list, map, nested message, Timestamp
    assert.ok(isCompiled(TimestampSchema));
    assert.equal(isCompiled(QueryRequestSchema), false); // wrappers, Struct, Duration…
    assert.equal(isCompiled(FileDescriptorProtoSchema), false); // proto2 required fields below it
  });

  test("a Timestamp with 0, 3, 6 or 9 fractional digits, at the range's ends, and across seconds", () => {
    for (const seconds of [-62135596800n, -1n, 0n, 1n, 1_700_000_000n, 1_700_000_001n, 253402300799n]) {
      for (const nanos of [0, 1, 10, 1000, 1_000_000, 120_000_000, 999_999_999]) {
        const ts = create(TimestampSchema, { seconds, nanos });
        assertSame(TimestampSchema, ts);
        assertSame(EchoResponseSchema, create(EchoResponseSchema, { message: "m", traceId: "t", receivedAt: ts }));
      }
    }
  });

  test("values protobuf-es rejects fail with protobuf-es's own error", () => {
    const cases: [DescMessage, () => Message][] = [
      [TimestampSchema, () => create(TimestampSchema, { seconds: 253402300800n })],
      [TimestampSchema, () => create(TimestampSchema, { seconds: -62135596801n })],
      [TimestampSchema, () => create(TimestampSchema, { nanos: -1 })],
      [TimestampSchema, () => create(TimestampSchema, { nanos: 1_000_000_000 })],
      [EchoResponseSchema, () => Object.assign(create(EchoResponseSchema), { message: 5 })],
      [
        EchoResponseSchema,
        () => Object.assign(create(EchoResponseSchema), { receivedAt: create(TimestampSchema, { seconds: 1n << 60n }) }),
      ],
      [EchoResponseSchema, () => create(QueryRequestSchema) as unknown as Message],
      [QueryRequestSchema, () => Object.assign(create(QueryRequestSchema), { int64Value: 1.5 })],
      [QueryRequestSchema, () => Object.assign(create(QueryRequestSchema), { repeatedString: [1] })],
      [QueryRequestSchema, () => Object.assign(create(QueryRequestSchema), { enumValue: "GENRE_FICTION" })],
    ];
    for (const [desc, make] of cases) {
      const message = make();
      assert.throws(() => toJsonString(desc, message, OPTIONS));
      assertSame(desc, message);
    }
  });

  test("recursive and proto2 types (descriptor.proto) are written as protobuf-es writes them", () => {
    const files = [file_fixture_v1_fixture, file_gatewaytest_v1_library, file_google_protobuf_descriptor];
    for (const desc of messagesOf(file_google_protobuf_descriptor)) assertSame(desc, create(desc));
    // Real data: the descriptors themselves, proto2 with nested and recursive messages.
    for (const file of files) assertSame(FileDescriptorProtoSchema, file.proto);
    assert.ok(toBinary(FileDescriptorProtoSchema, file_gatewaytest_v1_library.proto).length > 0);
  });
});
