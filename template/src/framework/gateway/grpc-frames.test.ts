import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { Code, GrpcError } from "../call/status.js";
import { encodeFrame, FrameDecoder } from "./grpc-frames.js";

const text = (messages: Buffer[]) => messages.map((m) => m.toString());

describe("encodeFrame", () => {
  test("flag 0, big-endian length, then the bytes", () => {
    assert.deepEqual([...encodeFrame(new Uint8Array([7, 8, 9]))], [0, 0, 0, 0, 3, 7, 8, 9]);
    assert.deepEqual([...encodeFrame(new Uint8Array(0))], [0, 0, 0, 0, 0]);
  });
});

describe("FrameDecoder", () => {
  test("several frames in one chunk, an empty message among them", () => {
    const chunk = Buffer.concat([encodeFrame(Buffer.from("one")), encodeFrame(new Uint8Array(0)), encodeFrame(Buffer.from("three"))]);
    const decoder = new FrameDecoder();
    assert.deepEqual(text(decoder.push(chunk)), ["one", "", "three"]);
    assert.equal(decoder.pending, false);
  });

  test("a frame split at every byte, prefix included, comes out once whole", () => {
    const frame = encodeFrame(Buffer.from("split message"));
    const decoder = new FrameDecoder();
    const out: string[] = [];
    for (let i = 0; i < frame.length; i++) {
      out.push(...text(decoder.push(frame.subarray(i, i + 1))));
      assert.equal(decoder.pending, i < frame.length - 1);
    }
    assert.deepEqual(out, ["split message"]);
  });

  test("chunk boundaries anywhere across many frames give the same messages in order", () => {
    const messages = Array.from({ length: 20 }, (_, i) => "m".repeat(i * 7));
    const body = Buffer.concat(messages.map((m) => encodeFrame(Buffer.from(m))));
    for (const size of [1, 2, 3, 5, 6, 11, 64, body.length]) {
      const decoder = new FrameDecoder();
      const out: string[] = [];
      for (let i = 0; i < body.length; i += size) out.push(...text(decoder.push(body.subarray(i, i + size))));
      assert.deepEqual(out, messages, `chunks of ${size}`);
      assert.equal(decoder.pending, false);
    }
  });

  test("the end of one frame and the start of the next in one chunk", () => {
    const body = Buffer.concat([encodeFrame(Buffer.from("first")), encodeFrame(Buffer.from("second"))]);
    const decoder = new FrameDecoder();
    assert.deepEqual(text(decoder.push(body.subarray(0, 3))), []);
    assert.deepEqual(text(decoder.push(body.subarray(3, 14))), ["first"]);
    assert.equal(decoder.pending, true);
    assert.deepEqual(text(decoder.push(body.subarray(14))), ["second"]);
  });

  test("a message over the limit is RESOURCE_EXHAUSTED, known from its prefix alone", () => {
    const decoder = new FrameDecoder(4);
    assert.deepEqual(text(decoder.push(encodeFrame(Buffer.from("1234")))), ["1234"]);
    assert.throws(
      () => decoder.push(encodeFrame(Buffer.from("12345")).subarray(0, 5)),
      (err: unknown) =>
        err instanceof GrpcError && err.code === Code.RESOURCE_EXHAUSTED && err.message === "Received message larger than max (5 vs. 4)",
    );
  });

  test("a compressed message is refused: the gateway offers no compression", () => {
    const frame = encodeFrame(Buffer.from("x"));
    frame[0] = 1;
    assert.throws(
      () => new FrameDecoder().push(frame),
      (err: unknown) => err instanceof GrpcError && err.code === Code.INTERNAL && /no compression was negotiated/.test(err.message),
    );
  });
});
