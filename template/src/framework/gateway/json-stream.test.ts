import assert from "node:assert/strict";
import { PassThrough } from "node:stream";
import { describe, test } from "node:test";
import { create, type Message } from "@bufbuild/protobuf";
import { StructSchema } from "@bufbuild/protobuf/wkt";
import { Code, GrpcError } from "../call/status.js";
import { MessageTooLargeError } from "../errors/http.js";
import { JsonSplitter, jsonMessages } from "./json-stream.js";

/** Every value the splitter finds in `chunks`, as text, the last literal included. */
function split(chunks: (string | Buffer)[], max = 1024): string[] {
  const splitter = new JsonSplitter(max);
  const values = chunks.flatMap((c) => splitter.push(Buffer.isBuffer(c) ? c : Buffer.from(c)).map(String));
  const last = splitter.end();
  return last ? [...values, String(last)] : values;
}

/** The same bytes cut at every possible place, one byte per chunk. */
const bytewise = (text: string) => [...Buffer.from(text)].map((b) => Buffer.from([b]));

describe("JsonSplitter", () => {
  const stream = '{"a":1}\n{"b":"x}{\\"y"}  {"c":[1,{"d":"]"}]}{"e":"\\\\"}\r\n[1,2]"s\\"q"';
  const expected = ['{"a":1}', '{"b":"x}{\\"y"}', '{"c":[1,{"d":"]"}]}', '{"e":"\\\\"}', "[1,2]", '"s\\"q"'];

  test("newline-delimited and concatenated values, braces and escaped quotes inside strings", () => {
    assert.deepEqual(split([stream]), expected);
  });

  test("the same values whatever the chunking, down to one byte per chunk", () => {
    assert.deepEqual(split(bytewise(stream)), expected);
    const bytes = Buffer.from(stream);
    for (let cut = 1; cut < bytes.length; cut++) {
      assert.deepEqual(split([bytes.subarray(0, cut), bytes.subarray(cut)]), expected, `cut at ${cut}`);
    }
  });

  test("top-level literals end at whitespace or where the next value starts; the last one at the end of the body", () => {
    assert.deepEqual(split(["1 22\n-3.5e2 true", "\tnull{}", '"x"7']), ["1", "22", "-3.5e2", "true", "null", "{}", '"x"', "7"]);
  });

  test("multi-byte UTF-8 split between chunks stays whole", () => {
    const text = '{"t":"Gjøvik ✓"}';
    assert.deepEqual(split(bytewise(text)), [text]);
  });

  test("a message over the limit fails with 413 RESOURCE_EXHAUSTED, whole in one chunk or unfinished over several", () => {
    const tooLarge = (err: unknown) => {
      assert.ok(err instanceof MessageTooLargeError);
      assert.equal(err.code, Code.RESOURCE_EXHAUSTED);
      return true;
    };
    assert.deepEqual(split(['{"a":"1234"}'], 12), ['{"a":"1234"}']); // exactly the limit
    assert.throws(() => new JsonSplitter(12).push(Buffer.from('{"a":"12345"}\n')), tooLarge);
    // Unfinished: rejected once more than the limit is held, not when the value would end.
    const splitter = new JsonSplitter(12);
    splitter.push(Buffer.from('{"a":"12'));
    assert.throws(() => splitter.push(Buffer.from("3456789")), tooLarge);
    // The limit is per message: many small ones in one chunk are fine.
    assert.equal(split(['{"a":1}'.repeat(100)], 12).length, 100);
  });

  test("a body that ends inside a message is INVALID_ARGUMENT", () => {
    for (const body of ['{"a":1', '{"a":"x', "[1,[2]"]) {
      const splitter = new JsonSplitter(100);
      splitter.push(Buffer.from(body));
      assert.throws(
        () => splitter.end(),
        (err: unknown) => err instanceof GrpcError && err.code === Code.INVALID_ARGUMENT && /ended inside a message/.test(err.message),
        body,
      );
    }
  });
});

describe("jsonMessages", () => {
  const decode = (json: string): Message => create(StructSchema, { fields: { json: { kind: { case: "stringValue", value: json } } } });
  const text = (m: Message | undefined) =>
    (m as unknown as { fields: Record<string, { kind: { value: string } }> }).fields.json!.kind.value;

  test("reads the next chunk of the body only when the messages split so far are used up", async () => {
    const body = new PassThrough();
    const messages = jsonMessages(body, 1024, decode);
    body.write('{"n":1}\n{"n":2}\n');
    assert.equal(text((await messages.next()).value), '{"n":1}');
    body.write('{"n":3}\n');
    assert.equal(text((await messages.next()).value), '{"n":2}');
    assert.equal(body.readableLength, 8, "the third message's chunk is still unread");
    assert.equal(text((await messages.next()).value), '{"n":3}');
    assert.equal(body.readableLength, 0);
    body.end();
    assert.equal((await messages.next()).done, true);
  });

  test("a message waits for its chunks; the decoder sees each with its index; the end of the body ends the messages", async () => {
    const body = new PassThrough();
    const seen: number[] = [];
    const messages = jsonMessages(body, 1024, (json, index) => {
      seen.push(index);
      return decode(json);
    });
    const first = messages.next();
    body.write('{"n":');
    body.write("1}7");
    assert.equal(text((await first).value), '{"n":1}');
    body.end();
    assert.equal(text((await messages.next()).value), "7");
    assert.equal((await messages.next()).done, true);
    assert.deepEqual(seen, [0, 1]);
  });

  test("invalid UTF-8 in a message is INVALID_ARGUMENT naming the message", async () => {
    const body = new PassThrough();
    body.end(Buffer.concat([Buffer.from('{"a":1}{"b":"'), Buffer.from([0xff]), Buffer.from('"}')]));
    const messages = jsonMessages(body, 1024, decode);
    await messages.next();
    await assert.rejects(
      messages.next(),
      (err: unknown) =>
        err instanceof GrpcError && err.code === Code.INVALID_ARGUMENT && /request message 2: not valid UTF-8/.test(err.message),
    );
  });

  test("a body destroyed mid-stream (the client left) ends the messages with CANCELLED", async () => {
    const body = new PassThrough();
    const messages = jsonMessages(body, 1024, decode);
    const pending = messages.next();
    body.destroy();
    await assert.rejects(pending, (err: unknown) => err instanceof GrpcError && err.code === Code.CANCELLED);
  });
});

test("jsonMessages: return() ends a read waiting for the body and leaves the body unread", async () => {
  const body = new PassThrough();
  const messages = jsonMessages(body, 1024, () => create(StructSchema));
  const waiting = messages.next();
  await messages.return!();
  assert.equal((await waiting).done, true);
  assert.equal(body.listenerCount("readable"), 0, "nothing keeps reading: the caller may resume() the body to discard it");
});
