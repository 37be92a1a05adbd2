import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { create, fromBinary, toBinary } from "@bufbuild/protobuf";
import { EchoResponseSchema } from "../../../test/gen/fixture/v1/fixture_pb.js";
import { Code, GrpcError } from "../call/status.js";
import { ResponseLimit, wireResponse } from "./response-size.js";

const reply = (message: string) => create(EchoResponseSchema, { message });

describe("a single response's bytes, encoded once for the size check", () => {
  test("go out as they are when the result the handler step made reaches the adapter", () => {
    const message = reply("hello");
    const wire = wireResponse(new ResponseLimit(1024, true).check(EchoResponseSchema, message));
    assert.ok(Buffer.isBuffer(wire));
    assert.deepEqual(new Uint8Array(wire), toBinary(EchoResponseSchema, message));
    assert.equal(fromBinary(EchoResponseSchema, wire).message, "hello");
  });

  test("are not used for another message, even in a copy of the result; nor kept when a custom interceptor could change the message", () => {
    const result = new ResponseLimit(1024, true).check(EchoResponseSchema, reply("hello"));
    const other = reply("replaced");
    assert.equal(wireResponse({ ...result, message: other }), other);
    assert.equal(wireResponse({ message: other }), other);
    const message = reply("kept as a message");
    assert.equal(wireResponse(new ResponseLimit(1024, false).check(EchoResponseSchema, message)), message);
  });

  test("over the limit, the check fails RESOURCE_EXHAUSTED", () => {
    assert.throws(
      () => new ResponseLimit(4, true).check(EchoResponseSchema, reply("longer than four bytes")),
      (err: unknown) => err instanceof GrpcError && err.code === Code.RESOURCE_EXHAUSTED,
    );
  });
});
