import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { create, type DescMessage, fromJson, type JsonValue, type Message, toBinary } from "@bufbuild/protobuf";
import { messagesOf, random } from "../../../test/framework/support/random.js";
import { EchoRequestSchema, FailRequestSchema, file_fixture_v1_fixture } from "../../../test/gen/fixture/v1/fixture_pb.js";
import {
  DeeperSchema,
  file_gatewaytest_v1_library,
  NestedSchema,
  QueryRequestSchema,
} from "../../../test/gen/gatewaytest/v1/library_pb.js";
import { jsonReader } from "./json-reader.js";

const READ = { ignoreUnknownFields: true } as const;

/** What the gateway did before the reader, and still does when it is unsure: JSON.parse, then protobuf-es. */
function reference(desc: DescMessage, text: string): Message | Error {
  try {
    return fromJson(desc, JSON.parse(text) as JsonValue, READ);
  } catch (err) {
    return err as Error;
  }
}

/** The reader's answer must be the reference's message, same fields, same bytes; undefined (unsure) is always allowed. */
function check(desc: DescMessage, text: string): Message | undefined {
  const ours = jsonReader(desc)!(text);
  if (ours === undefined) return undefined;
  const ref = reference(desc, text);
  assert.ok(!(ref instanceof Error), `${desc.typeName} ${JSON.stringify(text)}: the reader took text protobuf-es refuses (${String(ref)})`);
  assert.deepStrictEqual(ours, ref, `${desc.typeName} ${JSON.stringify(text)}`);
  assert.deepEqual(toBinary(desc, ours), toBinary(desc, ref));
  assert.deepEqual(Object.keys(ours), Object.keys(ref), "same properties in the same order");
  return ours;
}

/** Value texts, well-formed JSON or not. */
const VALUES = [
  '""',
  '"hello"',
  '"quo\\"te"',
  '"back\\\\slash"',
  '"\\u0041"',
  '"\\ud800"',
  '"\\ud83d\\ude00"',
  '"é漢字😀"',
  '"tab\there"',
  '"raw\u0001control"',
  '"unterminated',
  '"10"',
  '"-1"',
  '" 7"',
  "0",
  "-0",
  "1",
  "-1",
  "7",
  "01",
  "1.5",
  "1.0",
  "1e3",
  "1E3",
  "-",
  "999999999",
  "-999999999",
  "1000000000",
  "2147483647",
  "2147483648",
  "-2147483648",
  "-2147483649",
  "4294967295",
  "4294967296",
  "123456789012345678901234567890",
  "true",
  "false",
  "tru",
  "True",
  "null",
  "{}",
  '{"a":1}',
  "[]",
  "[1,2]",
  "[[[[[[[[[[[[[[[[[[[[1]]]]]]]]]]]]]]]]]]]]",
  "NaN",
  "Infinity",
];
const SPACES = ["", " ", "\n", "\t", "\r\n  ", "\u00a0", "\u2028", "\ufeff"];

/** A JSON-ish object text over the message's field names (JSON and proto), some unknown and hostile keys. */
function objectText(r: ReturnType<typeof random>, desc: DescMessage): string {
  const names = desc.fields.flatMap((f) => [f.jsonName, f.name]);
  const keys = [...names, ...names, "unknown", "__proto__", "constructor", "toString", "mess\\u0061ge", ""];
  const ws = () => (r.next() < 0.8 ? "" : r.pick(SPACES));
  const members: string[] = [];
  const n = r.int(5);
  for (let i = 0; i < n; i++)
    members.push(`${ws()}${JSON.stringify(r.pick(keys)).replace("\\\\u0061", "\\u0061")}${ws()}:${ws()}${r.pick(VALUES)}${ws()}`);
  let text = `${ws()}{${members.join(",")}}${ws()}`;
  // Malformed on purpose now and then: cut short, a stray character, a trailing comma, something after the end.
  const mutate = r.next();
  if (mutate < 0.05) text = text.slice(0, r.int(text.length));
  else if (mutate < 0.1) {
    const at = r.int(text.length + 1);
    text = text.slice(0, at) + r.pick([",", ":", "}", "{", '"', "x", "\\", " "]) + text.slice(at);
  } else if (mutate < 0.13) text = text.replace(/}\s*$/, ",}");
  else if (mutate < 0.16) text += r.pick(["{}", "x", "0", "}"]);
  return text;
}

describe("JSON reader", () => {
  test("reads the plain request types, and only those", () => {
    for (const desc of [EchoRequestSchema, FailRequestSchema, DeeperSchema]) assert.ok(jsonReader(desc), desc.typeName);
    // 64-bit integers, floats, bytes, enums, lists, messages, oneofs, explicit presence: protobuf-es reads those.
    assert.equal(jsonReader(QueryRequestSchema), undefined);
    assert.equal(jsonReader(NestedSchema), undefined);
  });

  test("takes the bodies clients send", () => {
    const plain = check(EchoRequestSchema, '{"message":"hello","traceId":"t-1","debug":true,"delayMs":250}');
    assert.ok(plain);
    assert.equal((plain as unknown as { delayMs: number }).delayMs, 250);
    assert.ok(check(EchoRequestSchema, ' {\n  "message": "é漢字😀",\r\n  "trace_id": "x", "delay_ms": 0 }\n'));
    assert.ok(check(EchoRequestSchema, "{}"));
    assert.ok(check(FailRequestSchema, '{"code":-5}'));
  });

  test("agrees with JSON.parse and protobuf-es on random and malformed texts of every message type", () => {
    const types = messagesOf(file_fixture_v1_fixture, file_gatewaytest_v1_library).filter((d) => jsonReader(d));
    assert.ok(types.length >= 5, `${types.length} plain types`);
    let taken = 0;
    let total = 0;
    for (const desc of types) {
      for (let seed = 0; seed < 800; seed++) {
        const text = objectText(random(seed * 7919 + desc.fields.length), desc);
        total++;
        if (check(desc, text)) taken++;
      }
    }
    // Both ways happen: the fast path takes a good share, and leaves the rest.
    assert.ok(taken > total / 10 && taken < total, `taken ${taken} of ${total}`);
  });

  test("is not fooled by __proto__, constructor, repeated keys, escapes, huge numbers, lone surrogates or nesting", () => {
    const unsure = [
      '{"__proto__":{"message":"polluted"}}',
      '{"constructor":{"prototype":{"x":1}}}',
      '{"message":"a","message":"b"}',
      '{"traceId":"a","trace_id":"b"}',
      '{"message":"\\u0068i"}',
      '{"mess\\u0061ge":"hi"}',
      '{"message":"\\ud800"}',
      '{"delayMs":12345678901234567890}',
      '{"delayMs":-0}',
      '{"delayMs":1e2}',
      '{"delayMs":"5"}',
      '{"message":null}',
      `{"message":${"[".repeat(10_000)}${"]".repeat(10_000)}}`,
      '{"message":"hi"}x',
      '\ufeff{"message":"hi"}',
      '{"message":"hi",}',
      "",
      "   ",
    ];
    for (const text of unsure) {
      assert.equal(jsonReader(EchoRequestSchema)!(text), undefined, text.slice(0, 60));
    }
    assert.equal(({} as Record<string, unknown>).message, undefined, "Object.prototype untouched");
    const zero = create(EchoRequestSchema);
    assert.deepStrictEqual(jsonReader(EchoRequestSchema)!("{}"), zero);
  });
});
