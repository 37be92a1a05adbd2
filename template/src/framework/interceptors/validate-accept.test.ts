import assert from "node:assert/strict";
import { describe, test } from "node:test";
import {
  create,
  createFileRegistry,
  type DescMessage,
  fromJsonString,
  type Message,
  type MessageInitShape,
  type Registry,
  setExtension,
  toBinary,
} from "@bufbuild/protobuf";
import { pathToString } from "@bufbuild/protobuf/reflect";
import {
  FieldOptionsSchema,
  FileDescriptorProtoSchema,
  file_google_protobuf_timestamp,
  FieldDescriptorProto_Label as Label,
  MessageOptionsSchema,
  OneofOptionsSchema,
  FieldDescriptorProto_Type as Type,
} from "@bufbuild/protobuf/wkt";
import { createValidator } from "@bufbuild/protovalidate";
import {
  FieldRulesSchema,
  field as fieldRules,
  Ignore,
  MessageRulesSchema,
  message as messageRules,
  OneofRulesSchema,
  oneof as oneofRules,
  StringRulesSchema,
} from "@bufbuild/protovalidate/gen/buf/validate/validate_pb.js";
import { Metadata } from "@grpc/grpc-js";
import { random } from "../../../test/framework/support/random.js";
import * as fixture from "../../../test/gen/fixture/v1/fixture_pb.js";
import { type BadRequest, BadRequestSchema } from "../../gen/google/rpc/error_details_pb.js";
import { CallContext } from "../call/context.js";
import { methodInfo } from "../call/method.js";
import { GrpcError } from "../call/status.js";
import type { Next } from "../call/types.js";
import { codePoints, utf8Length } from "./validate-accept-scalars.js";
import { compileFastAccept } from "./validate-accept.js";
import { validate } from "./validate.js";

// StringRules' documentation-only rule (field 34), named by number: the generator renames the service's name
// token, that very word, in every file it copies, so the word itself would not survive into a new service.
const SAMPLE_RULE = StringRulesSchema.fields.find((f) => f.number === 34)!.localName;

// The compiled predicate may say "valid" only where protovalidate finds no violation. For every rule kind it
// compiles, random rule sets are put on fields of every shape (implicit, optional, oneof member, list item,
// map key and value) and random messages are checked both ways: the answers must be the same.

type FieldRulesInit = MessageInitShape<typeof FieldRulesSchema>;
const validator = createValidator();

type Rng = ReturnType<typeof random>;

const fieldOptions = (rules: FieldRulesInit) => {
  const options = create(FieldOptionsSchema);
  setExtension(options, fieldRules, create(FieldRulesSchema, rules));
  return options;
};

// Values and rule operands come from small pools, so rules and values meet often (equal, just below, just above).
const PIECES = ["", "a", "b", "ab", "é", "😀", "\uD800", "\uDC00", "x😀", "ba"];
const str = (r: Rng) => Array.from({ length: r.int(5) }, () => r.pick(PIECES)).join("");
const BYTE_POOL = [new Uint8Array([]), new Uint8Array([1]), new Uint8Array([2]), new Uint8Array([1, 2]), new Uint8Array([2, 1, 2])];
const bytes = (r: Rng) => new Uint8Array(Array.from({ length: r.int(5) }, () => 1 + r.int(2)));
const INT32 = [0, 1, -1, 2, 3, -3, 2147483647, -2147483648];
const UINT32 = [0, 1, 2, 3, 7, 4294967295];
const INT64 = [0n, 1n, -1n, 2n, 3n, -3n, 9223372036854775807n, -9223372036854775808n];
const UINT64 = [0n, 1n, 2n, 3n, 7n, 18446744073709551615n];
const FLOATS = [0, -0, 1, -1, 1.5, 2, -2.5, Number.NaN, Number.POSITIVE_INFINITY, Number.NEGATIVE_INFINITY, 3.4e38];
const SIZES = [0n, 1n, 2n, 3n, 4n, 6n];

type Kind = {
  /** The FieldRules `type` case and the protoc type of a field of this kind. */
  rule: string;
  type: Type;
  value: (r: Rng) => unknown;
  rules: (r: Rng) => Record<string, unknown>;
  /** The map key / list item zero value used by IGNORE_IF_ZERO_VALUE. */
};

function numeric(rule: string, type: Type, pool: readonly (number | bigint)[], float = false): Kind {
  return {
    rule,
    type,
    value: (r) => r.pick(pool),
    rules: (r) => {
      const rules: Record<string, unknown> = {};
      if (r.chance(0.2)) rules.const = r.pick(pool);
      if (r.chance(0.5)) rules.greaterThan = { case: r.pick(["gt", "gte"]), value: r.pick(pool.filter((v) => !Number.isNaN(v))) };
      if (r.chance(0.5)) rules.lessThan = { case: r.pick(["lt", "lte"]), value: r.pick(pool.filter((v) => !Number.isNaN(v))) };
      if (r.chance(0.25)) rules.in = r.some(pool);
      if (r.chance(0.25)) rules.notIn = r.some(pool);
      if (float && r.chance(0.4)) rules.finite = r.chance(0.8);
      return rules;
    },
  };
}

const KINDS: Kind[] = [
  {
    rule: "string",
    type: Type.STRING,
    value: str,
    rules: (r) => {
      const rules: Record<string, unknown> = {};
      for (const k of ["len", "minLen", "maxLen", "lenBytes", "minBytes", "maxBytes"]) if (r.chance(0.25)) rules[k] = r.pick(SIZES);
      for (const k of ["const", "prefix", "suffix", "contains", "notContains"]) if (r.chance(0.15)) rules[k] = str(r);
      if (r.chance(0.2)) rules.in = r.some(PIECES);
      if (r.chance(0.2)) rules.notIn = r.some(PIECES);
      if (r.chance(0.1)) rules.wellKnown = { case: r.pick(["email", "hostname", "uuid"]), value: false };
      return rules;
    },
  },
  {
    rule: "bytes",
    type: Type.BYTES,
    value: bytes,
    rules: (r) => {
      const rules: Record<string, unknown> = {};
      for (const k of ["len", "minLen", "maxLen"]) if (r.chance(0.3)) rules[k] = r.pick(SIZES);
      for (const k of ["const", "prefix", "suffix", "contains"]) if (r.chance(0.2)) rules[k] = r.pick(BYTE_POOL);
      if (r.chance(0.2)) rules.in = r.some(BYTE_POOL);
      if (r.chance(0.2)) rules.notIn = r.some(BYTE_POOL);
      if (r.chance(0.1)) rules.wellKnown = { case: r.pick(["ip", "uuid"]), value: false };
      return rules;
    },
  },
  {
    rule: "bool",
    type: Type.BOOL,
    value: (r) => r.chance(0.5),
    rules: (r) => (r.chance(0.7) ? { const: r.chance(0.5) } : {}),
  },
  {
    rule: "enum",
    type: Type.ENUM,
    value: (r) => r.pick([0, 1, 2, 5, -1]),
    rules: (r) => {
      const rules: Record<string, unknown> = {};
      if (r.chance(0.5)) rules.definedOnly = r.chance(0.8);
      if (r.chance(0.2)) rules.const = r.pick([0, 1, 5]);
      if (r.chance(0.3)) rules.in = r.some([0, 1, 2, 5]);
      if (r.chance(0.3)) rules.notIn = r.some([0, 1, 2, 5]);
      return rules;
    },
  },
  numeric("int32", Type.INT32, INT32),
  numeric("sint32", Type.SINT32, INT32),
  numeric("sfixed32", Type.SFIXED32, INT32),
  numeric("uint32", Type.UINT32, UINT32),
  numeric("fixed32", Type.FIXED32, UINT32),
  numeric("int64", Type.INT64, INT64),
  numeric("sint64", Type.SINT64, INT64),
  numeric("sfixed64", Type.SFIXED64, INT64),
  numeric("uint64", Type.UINT64, UINT64),
  numeric("fixed64", Type.FIXED64, UINT64),
  numeric("float", Type.FLOAT, FLOATS, true),
  numeric("double", Type.DOUBLE, FLOATS, true),
];

const IGNORES = [Ignore.UNSPECIFIED, Ignore.UNSPECIFIED, Ignore.IF_ZERO_VALUE, Ignore.ALWAYS];

/**
 * One message type per random rule set of a kind, with rule sets on fields of one or two of these shapes:
 * a implicit, b proto3 optional, c oneof member (beside an unruled string), d list (its items and size),
 * e map (its values, string keys for string rules, and its size).
 */
function ruledFile(kind: Kind, r: Rng, count: number): Registry {
  const typed = (name: string, number: number, extra: object) => ({
    name,
    number,
    type: kind.type,
    label: Label.OPTIONAL,
    ...(kind.type === Type.ENUM ? { typeName: ".k.Color" } : {}),
    ...extra,
  });
  const scalarRules = (): FieldRulesInit => (r.chance(0.2) ? {} : ({ type: { case: kind.rule, value: kind.rules(r) } } as never));
  const messageType = Array.from({ length: count }, (_, i) => {
    // Rules on one or two of the shapes, so that a message passes often enough for both answers to be common.
    const ruled = new Set(r.some(["a", "b", "c", "d", "e"], 2));
    const options = (shape: string, rules: () => FieldRulesInit) => (ruled.has(shape) ? { options: fieldOptions(rules()) } : {});
    const presence = () => ({
      ...(r.chance(0.2) ? { required: true } : {}),
      ...(r.chance(0.5) ? { ignore: r.pick(IGNORES) } : {}),
    });
    const top = (): FieldRulesInit => ({ ...scalarRules(), ...presence() });
    const items: FieldRulesInit = { ...scalarRules(), ...(r.chance(0.4) ? { ignore: r.pick(IGNORES) } : {}) };
    const repeated: Record<string, unknown> = { items };
    if (r.chance(0.2)) repeated.minItems = r.pick(SIZES);
    if (r.chance(0.2)) repeated.maxItems = r.pick(SIZES);
    if (r.chance(0.2)) repeated.unique = r.chance(0.8);
    const mapRules: Record<string, unknown> = { values: { ...scalarRules(), ...(r.chance(0.4) ? { ignore: r.pick(IGNORES) } : {}) } };
    if (r.chance(0.2)) mapRules.minPairs = r.pick(SIZES);
    if (r.chance(0.2)) mapRules.maxPairs = r.pick(SIZES);
    if (kind.rule === "string" && r.chance(0.5))
      mapRules.keys = { ...scalarRules(), ...(r.chance(0.4) ? { ignore: r.pick(IGNORES) } : {}) };
    const oneofRequired = ruled.has("c") && r.chance(0.2);
    return {
      name: `T${i}`,
      oneofDecl: [{ name: "o", ...(oneofRequired ? { options: oneofOptions() } : {}) }, { name: "_b" }],
      field: [
        typed("a", 1, options("a", top)),
        typed("b", 2, { ...options("b", top), proto3Optional: true, oneofIndex: 1 }),
        typed("c", 3, { ...options("c", top), oneofIndex: 0 }),
        { name: "c2", number: 4, type: Type.STRING, label: Label.OPTIONAL, oneofIndex: 0 },
        typed("d", 5, {
          label: Label.REPEATED,
          ...options("d", () => ({ type: { case: "repeated", value: repeated }, ...presence() }) as never),
        }),
        {
          name: "e",
          number: 6,
          type: Type.MESSAGE,
          label: Label.REPEATED,
          typeName: `.k.T${i}.EEntry`,
          ...options("e", () => ({ type: { case: "map", value: mapRules }, ...presence() }) as never),
        },
      ],
      nestedType: [
        {
          name: "EEntry",
          options: { mapEntry: true },
          field: [{ name: "key", number: 1, type: Type.STRING, label: Label.OPTIONAL }, typed("value", 2, {})],
        },
      ],
    };
  });
  return createFileRegistry(
    create(FileDescriptorProtoSchema, {
      name: `${kind.rule}.proto`,
      package: "k",
      syntax: "proto3",
      enumType: [{ name: "Color", value: [0, 1, 2].map((n) => ({ name: `C${n}`, number: n })) }],
      messageType,
    }),
    () => undefined,
  );
}

function oneofOptions() {
  const options = create(OneofOptionsSchema);
  setExtension(options, oneofRules, create(OneofRulesSchema, { required: true }));
  return options;
}

/** A random message of a ruledFile type: every field set or not, lists and maps of 0-4 entries. */
function randomMessage(desc: DescMessage, kind: Kind, r: Rng): Message {
  const init: Record<string, unknown> = {};
  if (r.chance(0.7)) init.a = kind.value(r);
  if (r.chance(0.5)) init.b = kind.value(r);
  const c = r.int(3);
  if (c === 1) init.o = { case: "c", value: kind.value(r) };
  if (c === 2) init.o = { case: "c2", value: str(r) };
  init.d = Array.from({ length: r.int(4) }, () => kind.value(r));
  init.e = Object.fromEntries(Array.from({ length: r.int(3) }, () => [str(r), kind.value(r)]));
  return create(desc, init as never);
}

/** Whether protovalidate finds the message valid, after asserting the predicate says the same. */
function equivalent(desc: DescMessage, message: Message, accept: (m: Message) => boolean, label: string, errorOk = false): boolean {
  const result = validator.validate(desc, message);
  if (errorOk && result.kind === "error") {
    // protovalidate fails on it (a call gets INTERNAL): the predicate must leave it to protovalidate.
    assert.equal(accept(message), false, `${label}: accepted a message protovalidate cannot check`);
    return false;
  }
  assert.notEqual(result.kind, "error", `${label}: protovalidate could not check it`);
  const valid = result.kind === "valid";
  const accepted = accept(message);
  if (accepted && !valid) assert.fail(`${label}: accepted a message protovalidate rejects: ${show(desc, message)}`);
  assert.equal(accepted, valid, `${label}: ${show(desc, message)}`);
  return valid;
}

function show(desc: DescMessage, message: Message): string {
  return `${JSON.stringify(message, (_, v) => (typeof v === "bigint" ? `${v}n` : v instanceof Uint8Array ? [...v] : v))} (${desc.typeName})`;
}

describe("fast accept: the compiled predicate agrees with protovalidate", () => {
  for (const kind of KINDS) {
    test(`${kind.rule} rules on implicit, optional, oneof, list item, map key and value fields`, () => {
      const seed = 1000 + KINDS.indexOf(kind);
      const r = random(seed);
      const registry = ruledFile(kind, r, 60);
      let valid = 0;
      let invalid = 0;
      for (let i = 0; i < 60; i++) {
        const desc = registry.getMessage(`k.T${i}`) as DescMessage;
        const accept = compileFastAccept(desc);
        assert.ok(accept, `T${i} compiles (seed ${seed})`);
        for (let j = 0; j < 80; j++) {
          if (equivalent(desc, randomMessage(desc, kind, r), accept, `seed ${seed} T${i}#${j}`)) valid++;
          else invalid++;
        }
      }
      // Both answers occur often enough for the comparison to mean something.
      assert.ok(valid > 100 && invalid > 100, `valid ${valid}, invalid ${invalid}`);
    });
  }

  test("edge cases: surrogates against code-point and byte lengths, NaN, -0 and infinities against ranges and lists, empty byte needles", () => {
    const S = ["", "a", "ab", "é", "😀", "x😀", "\uD800", "\uDC00\uD800", "\uD800\uDC00", "\u0800", "\u07FF"];
    const F = [Number.NaN, 0, -0, 1, 3, 5, 6, Number.POSITIVE_INFINITY, Number.NEGATIVE_INFINITY];
    const B = [new Uint8Array([]), new Uint8Array([1]), new Uint8Array([1, 2]), new Uint8Array([2, 1])];
    const W = [
      "",
      "123e4567-e89b-12d3-a456-426614174000",
      "123E4567-E89B-12D3-A456-42661417400G",
      "123e4567e89b12d3a456426614174000",
      "123e4567e89b12d3a45642661417400",
    ]
      .concat([
        "01ARZ3NDEKTSV4RRFFQ69G5FAV",
        "81ARZ3NDEKTSV4RRFFQ69G5FAV",
        "01ARZ3NDEKTSV4RRFFQ69G5FAI",
        "a.b",
        ".a.b",
        "a..b",
        "_x.y1",
        "1a",
      ])
      .concat(["X-Header", ":path", "a,b", "a b", "tab\tvalue", "nul\u0000", "del\u007f", "é", "line\nbreak"]);
    const formats: { wellKnown: { case: string; value: unknown } }[] = [
      { uuid: true },
      { tuuid: true },
      { ulid: true },
      { protobufFqn: true },
      { protobufDotFqn: true },
      { uuid: false },
    ]
      .map((f) => Object.entries(f)[0] as [string, boolean])
      .map(([k, v]) => ({ wellKnown: { case: k, value: v as unknown } }))
      .concat([1, 2, 0].map((value) => ({ wellKnown: { case: "wellKnownRegex", value } })));
    const cases: [Type, string, Record<string, unknown>, unknown[]][] = [
      ...[{ minLen: 2n }, { maxLen: 1n }, { len: 1n }, { minLen: 1n, maxLen: 1n }].map((v) => [Type.STRING, "string", v, S] as const),
      ...[{ maxBytes: 2n }, { minBytes: 3n }, { lenBytes: 3n }, { lenBytes: 4n }].map((v) => [Type.STRING, "string", v, S] as const),
      ...[{ prefix: "\uD800" }, { suffix: "" }, { contains: "😀" }, { notContains: "\uDC00" }, { in: ["😀", ""] }].map(
        (v) => [Type.STRING, "string", v, S] as const,
      ),
      ...formats.map((v) => [Type.STRING, "string", v, W] as const),
      ...[{ in: [Number.NaN, 1] }, { notIn: [Number.NaN, 0] }, { const: Number.NaN }, { const: -0 }, { finite: true }].map(
        (v) => [Type.DOUBLE, "double", v, F] as const,
      ),
      ...[
        { greaterThan: { case: "gt", value: 5 }, lessThan: { case: "lt", value: 1 } },
        { greaterThan: { case: "gte", value: 5 }, lessThan: { case: "lte", value: 1 } },
        { greaterThan: { case: "gt", value: 1 }, lessThan: { case: "lt", value: 1 } },
        { greaterThan: { case: "gte", value: -0 } },
        { lessThan: { case: "lt", value: Number.POSITIVE_INFINITY } },
      ].map((v) => [Type.FLOAT, "float", v, F] as const),
      ...[{ greaterThan: { case: "gt", value: 5n }, lessThan: { case: "lt", value: 1n } }, { in: [-1n, 18n] }].map(
        (v) => [Type.INT64, "int64", v, [-2n, -1n, 0n, 1n, 3n, 5n, 6n, 18n]] as const,
      ),
      ...[
        { prefix: new Uint8Array([]) },
        { contains: new Uint8Array([]) },
        { suffix: new Uint8Array([1, 2]) },
        { in: [new Uint8Array([])] },
        { const: new Uint8Array([1]) },
      ].map((v) => [Type.BYTES, "bytes", v, B] as const),
    ] as never;
    const registry = createFileRegistry(
      create(FileDescriptorProtoSchema, {
        name: "edge.proto",
        package: "edge",
        syntax: "proto3",
        messageType: cases.map(([type, rule, rules], i) => ({
          name: `E${i}`,
          field: [
            { name: "v", number: 1, type, label: Label.OPTIONAL, options: fieldOptions({ type: { case: rule, value: rules } } as never) },
          ],
        })),
      }),
      () => undefined,
    );
    cases.forEach(([, rule, rules, values], i) => {
      const desc = registry.getMessage(`edge.E${i}`) as DescMessage;
      const accept = compileFastAccept(desc);
      assert.ok(accept, `${rule} ${JSON.stringify(rules, (_, v) => (typeof v === "bigint" ? `${v}` : v))}`);
      for (const v of values) equivalent(desc, create(desc, { v } as never), accept, `E${i} ${rule}`);
    });
  });

  test("repeated.unique on long lists (beyond the linear scan): NaN is distinct, -0 equals 0, bytes by content", () => {
    const cases: [Type, unknown[]][] = [];
    const range = (n: number) => Array.from({ length: n }, (_, i) => i);
    for (const extra of [[Number.NaN, Number.NaN], [0, -0], [3.5, 3.5], [7]])
      cases.push([Type.DOUBLE, [...range(20).map((i) => i + 0.5), ...extra]]);
    for (const extra of [[5n], [99n, 100n]]) cases.push([Type.INT64, [...range(20).map(BigInt), ...extra]]);
    for (const extra of [[new Uint8Array([3, 0])], [new Uint8Array([30, 0])]])
      cases.push([Type.BYTES, [...range(20).map((i) => new Uint8Array([i, 0])), ...extra]]);
    const registry = createFileRegistry(
      create(FileDescriptorProtoSchema, {
        name: "unique.proto",
        package: "u",
        syntax: "proto3",
        messageType: cases.map(([type], i) => ({
          name: `U${i}`,
          field: [
            {
              name: "v",
              number: 1,
              type,
              label: Label.REPEATED,
              options: fieldOptions({ type: { case: "repeated", value: { unique: true } } }),
            },
          ],
        })),
      }),
      () => undefined,
    );
    let valid = 0;
    cases.forEach(([, list], i) => {
      const desc = registry.getMessage(`u.U${i}`) as DescMessage;
      const accept = compileFastAccept(desc);
      assert.ok(accept);
      if (equivalent(desc, create(desc, { v: list } as never), accept, `U${i}`)) valid++;
    });
    assert.equal(valid, 4);
  });

  test("string lengths count code points (a surrogate pair is one, a lone surrogate one) and UTF-8 bytes as TextEncoder writes them", () => {
    const r = random(7);
    const encoder = new TextEncoder();
    for (let i = 0; i < 2000; i++) {
      const s = Array.from({ length: r.int(8) }, () =>
        r.pick([...PIECES, "\uDBFF", "\uDFFF", "\u07FF", "\u0800", "\uFFFF", "\u{10FFFF}"]),
      ).join("");
      assert.equal(codePoints(s), [...s].length, JSON.stringify(s));
      assert.equal(utf8Length(s), encoder.encode(s).length, JSON.stringify(s));
    }
  });
});

/** Nested and recursive message types, required message fields, oneof required and ignore on message fields. */
const nested = createFileRegistry(
  create(FileDescriptorProtoSchema, {
    name: "n.proto",
    package: "n",
    syntax: "proto3",
    messageType: [
      {
        name: "Leaf",
        field: [
          {
            name: "name",
            number: 1,
            type: Type.STRING,
            label: Label.OPTIONAL,
            options: fieldOptions({ type: { case: "string", value: { minLen: 1n } } }),
          },
        ],
      },
      {
        name: "Tree",
        oneofDecl: [{ name: "kind", options: oneofOptions() }],
        field: [
          {
            name: "leaf",
            number: 1,
            type: Type.MESSAGE,
            typeName: ".n.Leaf",
            label: Label.OPTIONAL,
            options: fieldOptions({ required: true }),
          },
          { name: "left", number: 2, type: Type.MESSAGE, typeName: ".n.Tree", label: Label.OPTIONAL },
          {
            name: "skipped",
            number: 3,
            type: Type.MESSAGE,
            typeName: ".n.Leaf",
            label: Label.OPTIONAL,
            options: fieldOptions({ ignore: Ignore.ALWAYS }),
          },
          {
            name: "kids",
            number: 4,
            type: Type.MESSAGE,
            typeName: ".n.Tree",
            label: Label.REPEATED,
            options: fieldOptions({ type: { case: "repeated", value: { maxItems: 2n } } }),
          },
          { name: "byName", number: 5, type: Type.MESSAGE, typeName: ".n.Tree.ByNameEntry", label: Label.REPEATED },
          { name: "x", number: 6, type: Type.INT32, label: Label.OPTIONAL, oneofIndex: 0 },
          { name: "y", number: 7, type: Type.MESSAGE, typeName: ".n.Leaf", label: Label.OPTIONAL, oneofIndex: 0 },
          {
            name: "plain",
            number: 8,
            type: Type.MESSAGE,
            typeName: ".google.protobuf.Timestamp",
            label: Label.OPTIONAL,
            options: fieldOptions({ required: true }),
          },
        ],
        nestedType: [
          {
            name: "ByNameEntry",
            options: { mapEntry: true },
            field: [
              { name: "key", number: 1, type: Type.STRING, label: Label.OPTIONAL },
              { name: "value", number: 2, type: Type.MESSAGE, typeName: ".n.Leaf", label: Label.OPTIONAL },
            ],
          },
        ],
      },
    ],
    dependency: ["google/protobuf/timestamp.proto"],
  }),
  (name) => (name === file_google_protobuf_timestamp.proto.name ? file_google_protobuf_timestamp : undefined),
);

function randomTree(r: Rng, depth: number): Record<string, unknown> {
  const leaf = () => ({ name: r.pick(["", "a", "😀", "ab", "b"]) });
  const tree: Record<string, unknown> = {};
  if (r.chance(0.95)) tree.leaf = leaf();
  if (r.chance(0.3)) tree.skipped = leaf();
  if (r.chance(0.95)) tree.plain = { seconds: 1n };
  const k = r.pick([0, 1, 1, 2, 2]);
  if (k === 1) tree.kind = { case: "x", value: r.pick([0, 5]) };
  if (k === 2) tree.kind = { case: "y", value: leaf() };
  if (depth > 0) {
    if (r.chance(0.3)) tree.left = randomTree(r, depth - 1);
    tree.kids = Array.from({ length: r.pick([0, 0, 1, 2, 3]) }, () => randomTree(r, depth - 1));
    tree.byName = Object.fromEntries(Array.from({ length: r.int(3) }, (_, i) => [`k${i}`, leaf()]));
  }
  return tree;
}

describe("fast accept: nested, recursive and unruled types", () => {
  test("a recursive type with required message fields, oneof required, ignore ALWAYS, lists and maps of ruled messages", () => {
    const desc = nested.getMessage("n.Tree") as DescMessage;
    const accept = compileFastAccept(desc);
    assert.ok(accept);
    const r = random(42);
    let valid = 0;
    for (let i = 0; i < 3000; i++) {
      if (equivalent(desc, create(desc, randomTree(r, r.int(4)) as never), accept, `tree #${i}`)) valid++;
    }
    assert.ok(valid > 100 && valid < 2900, `valid ${valid}`);
  });

  test("the request types of the fixture service (a copy of the generated service's) compile, accept valid messages and agree on random ones", () => {
    const r = random(3);
    for (const file of [fixture]) {
      const types = [
        file.EchoRequestSchema,
        file.CountdownRequestSchema,
        file.FailRequestSchema,
        file.ChatRequestSchema,
        file.SumRequestSchema,
      ];
      for (const desc of types as DescMessage[]) {
        const accept = compileFastAccept(desc);
        assert.ok(accept, desc.typeName);
        for (let i = 0; i < 500; i++) {
          const init = {
            message: str(r),
            text: str(r),
            traceId: str(r),
            delayMs: r.pick(UINT32.concat([30000, 30001, 10000, 10001, 1000, 1001])),
            from: r.pick(UINT32.concat([1000, 1001])),
            intervalMs: r.pick(UINT32.concat([10000, 10001])),
            code: r.pick(INT32.concat([16, 17])),
            value: r.pick(INT64),
          };
          const fields = Object.fromEntries(desc.fields.map((f) => [f.localName, init[f.localName as keyof typeof init]]));
          equivalent(desc, create(desc, fields as never), accept, desc.typeName);
        }
      }
      assert.equal(compileFastAccept(file.EchoRequestSchema)?.(create(file.EchoRequestSchema, { message: "hello", delayMs: 30000 })), true);
      assert.equal(compileFastAccept(file.EchoRequestSchema)?.(create(file.EchoRequestSchema, { message: "" })), false);
    }
  });

  test("map keys an attacker picks (__proto__, constructor, toString) are read as the map's own entries, as protovalidate reads them", () => {
    const desc = createFileRegistry(
      create(FileDescriptorProtoSchema, {
        name: "m.proto",
        package: "m",
        syntax: "proto3",
        messageType: [
          {
            name: "M",
            field: [
              {
                name: "m",
                number: 1,
                type: Type.MESSAGE,
                typeName: ".m.M.MEntry",
                label: Label.REPEATED,
                options: fieldOptions({
                  type: {
                    case: "map",
                    value: {
                      keys: { type: { case: "string", value: { maxLen: 12n } } },
                      values: { type: { case: "string", value: { minLen: 2n } } },
                    },
                  },
                }),
              },
            ],
            nestedType: [
              {
                name: "MEntry",
                options: { mapEntry: true },
                field: [
                  { name: "key", number: 1, type: Type.STRING, label: Label.OPTIONAL },
                  { name: "value", number: 2, type: Type.STRING, label: Label.OPTIONAL },
                ],
              },
            ],
          },
        ],
      }),
      () => undefined,
    ).getMessage("m.M") as DescMessage;
    const accept = compileFastAccept(desc);
    assert.ok(accept);
    let valid = 0;
    for (const key of ["__proto__", "constructor", "toString", "hasOwnProperty", "a_very_long_key"]) {
      for (const value of ["x", "xy"]) {
        if (equivalent(desc, fromJsonString(desc, JSON.stringify({ m: { [key]: value, ab: "cd" } })), accept, `${key}: ${value}`)) valid++;
      }
    }
    assert.equal(valid, 3); // hasOwnProperty and a_very_long_key are longer than 12
  });

  test("rules on int, 64-bit and bool map keys see the key as protobuf-es's reflection turns the property name back", () => {
    const keyTypes: [Type, string, Record<string, unknown>, string[]][] = [
      [
        Type.INT32,
        "int32",
        { greaterThan: { case: "gt", value: -2 }, lessThan: { case: "lt", value: 20 } },
        ["1", "-2", "-1", "0x10", " 3", "1e2", "abc", "19.9"],
      ],
      [Type.SINT64, "sint64", { notIn: [0n, 5n] }, ["0", "5", "-5", "9223372036854775807", "9223372036854775808", "x"]],
      [Type.UINT64, "uint64", { lte: 10n } as never, ["0", "10", "11", "18446744073709551615", "-1", "1.5"]],
      [Type.BOOL, "bool", { const: true }, ["true", "false", "TRUE", "1"]],
      [Type.FIXED32, "fixed32", { in: [0, 7] }, ["0", "7", "07", "8"]],
    ];
    const registry = createFileRegistry(
      create(FileDescriptorProtoSchema, {
        name: "keys.proto",
        package: "keys",
        syntax: "proto3",
        messageType: keyTypes.map(([type, rule, rules], i) => ({
          name: `K${i}`,
          field: [
            {
              name: "m",
              number: 1,
              type: Type.MESSAGE,
              typeName: `.keys.K${i}.MEntry`,
              label: Label.REPEATED,
              options: fieldOptions({
                type: {
                  case: "map",
                  value: { keys: { type: { case: rule, value: rule === "uint64" ? { lessThan: { case: "lte", value: 10n } } : rules } } },
                },
              } as never),
            },
          ],
          nestedType: [
            {
              name: "MEntry",
              options: { mapEntry: true },
              field: [
                { name: "key", number: 1, type, label: Label.OPTIONAL },
                { name: "value", number: 2, type: Type.STRING, label: Label.OPTIONAL },
              ],
            },
          ],
        })),
      }),
      () => undefined,
    );
    let valid = 0;
    let invalid = 0;
    keyTypes.forEach(([, rule, , names], i) => {
      const desc = registry.getMessage(`keys.K${i}`) as DescMessage;
      const accept = compileFastAccept(desc);
      assert.ok(accept, rule);
      for (const name of names) {
        // A key protobuf-es cannot turn back ("abc" for an int32 key) makes protovalidate fail, not refuse.
        if (equivalent(desc, create(desc, { m: { [name]: "v" } } as never), accept, `${rule} key ${JSON.stringify(name)}`, true)) valid++;
        else invalid++;
      }
    });
    assert.ok(valid > 8 && invalid > 8, `valid ${valid}, invalid ${invalid}`);
  });

  test("a message of another type is never accepted", () => {
    const accept = compileFastAccept(fixture.EchoRequestSchema);
    assert.equal(accept?.(create(fixture.ChatRequestSchema, { text: "hello" })), false);
  });
});

/** Types with a rule the compiler leaves to protovalidate: each must get no predicate. */
const fallbacks = createFileRegistry(
  create(FileDescriptorProtoSchema, {
    name: "f.proto",
    package: "f",
    syntax: "proto3",
    messageType: [
      ...(
        [
          ["FieldCel", Type.STRING, { cel: [{ id: "x", expression: "this != 'x'", message: "not x" }] }],
          ["Pattern", Type.STRING, { type: { case: "string", value: { pattern: "^a+$" } } }],
          ["Email", Type.STRING, { type: { case: "string", value: { wellKnown: { case: "email", value: true } } } }],
          [
            "HeaderLoose",
            Type.STRING,
            { type: { case: "string", value: { wellKnown: { case: "wellKnownRegex", value: 1 }, strict: false } } },
          ],
          ["Sample", Type.STRING, { type: { case: "string", value: { [SAMPLE_RULE]: ["x"] } } }],
          ["BytesIp", Type.BYTES, { type: { case: "bytes", value: { wellKnown: { case: "ip", value: true } } } }],
          ["WrongKind", Type.UINT32, { type: { case: "int32", value: { gt: 1 } } }],
          ["NaNBound", Type.DOUBLE, { type: { case: "double", value: { greaterThan: { case: "gt", value: Number.NaN } } } }],
        ] as const
      ).map(([name, type, rules]) => ({
        name,
        field: [{ name: "v", number: 1, type, label: Label.OPTIONAL, options: fieldOptions(rules as never) }],
      })),
      { name: "MessageCel", options: messageCel(), field: [{ name: "v", number: 1, type: Type.STRING, label: Label.OPTIONAL }] },
      {
        name: "UniqueMessages",
        field: [
          {
            name: "v",
            number: 1,
            type: Type.MESSAGE,
            typeName: ".f.MessageCel",
            label: Label.REPEATED,
            options: fieldOptions({ type: { case: "repeated", value: { unique: true } } }),
          },
        ],
      },
      { name: "HoldsCel", field: [{ name: "v", number: 1, type: Type.MESSAGE, typeName: ".f.FieldCel", label: Label.OPTIONAL }] },
    ],
  }),
  () => undefined,
);

function messageCel() {
  const options = create(MessageOptionsSchema);
  setExtension(
    options,
    messageRules,
    create(MessageRulesSchema, { cel: [{ id: "never", expression: "this.v != 'bad'", message: "not bad" }] }),
  );
  return options;
}

describe("fast accept: rules left to protovalidate", () => {
  test("a CEL rule (field or message, also held), a regex, email, a loose header regex, a documentation-only sample value or a mismatched rule kind: no predicate", () => {
    for (const name of [
      "FieldCel",
      "Pattern",
      "Email",
      "HeaderLoose",
      "Sample",
      "BytesIp",
      "WrongKind",
      "NaNBound",
      "MessageCel",
      "UniqueMessages",
      "HoldsCel",
    ]) {
      assert.equal(compileFastAccept(fallbacks.getMessage(`f.${name}`) as DescMessage), undefined, name);
    }
  });

  test("the interceptor still refuses what only CEL catches, with protovalidate's own violation", async () => {
    const desc = fallbacks.getMessage("f.FieldCel") as DescMessage;
    const error = await interceptorError(desc, create(desc, { v: "x" } as never));
    assert.ok(error instanceof GrpcError);
    assert.equal(error.message, "v: not x [x]");
  });
});

const steps = new Map<DescMessage, { step: ReturnType<ReturnType<typeof validate>>; method: unknown }>();

/** Runs one unary call through the validation interceptor with a request type of our own. */
async function interceptorError(desc: DescMessage, request: Message): Promise<unknown> {
  let known = steps.get(desc);
  if (known === undefined) {
    const method = { ...methodInfo(fixture.FixtureService.method.echo), desc: { ...fixture.FixtureService.method.echo, input: desc } };
    const answered: Next = async () => ({ message: create(fixture.EchoResponseSchema) });
    known = { step: validate()(answered, method as never), method };
    steps.set(desc, known);
  }
  const { step, method } = known;
  const ctx = new CallContext({ method: method as never, transport: "grpc", metadata: new Metadata(), deadline: Number.POSITIVE_INFINITY });
  try {
    await step({ method: method as never, ctx, request } as never);
    return undefined;
  } catch (err) {
    return err;
  }
}

describe("the interceptor with a compiled predicate", () => {
  test("an invalid request gets protovalidate's status, message and BadRequest detail, byte for byte", async () => {
    const desc = nested.getMessage("n.Tree") as DescMessage;
    const r = random(9);
    let rejected = 0;
    for (let i = 0; i < 300; i++) {
      const message = create(desc, randomTree(r, 2) as never);
      const result = validator.validate(desc, message);
      const error = await interceptorError(desc, message);
      if (result.kind === "valid") {
        assert.equal(error, undefined);
        continue;
      }
      rejected++;
      assert.ok(error instanceof GrpcError && result.kind === "invalid");
      assert.equal(error.code, 3);
      assert.equal(error.message, result.error.message);
      assert.equal(error.details.length, 1);
      const fieldViolations = result.violations.map((v) => ({ field: pathToString(v.field), description: v.message }));
      assert.ok(fieldViolations.length > 0);
      assert.deepEqual(
        toBinary(BadRequestSchema, error.details[0] as BadRequest),
        toBinary(BadRequestSchema, create(BadRequestSchema, { fieldViolations })),
      );
    }
    assert.ok(rejected > 50, `rejected ${rejected}`);
  });
});
