import assert from "node:assert/strict";
import { test } from "node:test";
import { decodeGrpcMessage, encodeGrpcMessage } from "./grpc-message.js";

test("every %XX of a grpc-message is decoded, reserved characters included", () => {
  assert.equal(decodeGrpcMessage("a%2Fb %23c %3Fd %26e"), "a/b #c ?d &e");
  assert.equal(decodeGrpcMessage("not found: shelves/1/books/2?x=1&y=2#top"), "not found: shelves/1/books/2?x=1&y=2#top");
  assert.equal(decodeGrpcMessage("caf%C3%A9 100%25"), "café 100%");
});

test("a grpc-message that does not decode is kept as sent", () => {
  for (const raw of ["50% off", "%E0%A4%A", "%zz"]) assert.equal(decodeGrpcMessage(raw), raw);
});

test("printable ASCII without % goes out as it is; anything else is percent-encoded and reads back the same", () => {
  assert.equal(encodeGrpcMessage("not found: a/b?c=1&d#e"), "not found: a/b?c=1&d#e");
  for (const message of ["100%", "a%2Fb / #c ?d &e", "café\n\tdone", "emoji 🚀", ""]) {
    const wire = encodeGrpcMessage(message);
    assert.match(wire, /^[\x20-\x7e]*$/, `${message} → ${wire}`);
    assert.equal(decodeGrpcMessage(wire), message);
  }
  // grpc-js's own encoding (encodeURI) reads back too.
  for (const message of ["100% a%2Fb", "a/b #c ?d &e", "café"]) assert.equal(decodeGrpcMessage(encodeURI(message)), message);
});
