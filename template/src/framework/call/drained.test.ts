import assert from "node:assert/strict";
import { EventEmitter } from "node:events";
import { PassThrough } from "node:stream";
import { test } from "node:test";
import { drained } from "./drained.js";

test("resolves when a full stream drains, and leaves no listener behind", async () => {
  const stream = new PassThrough({ highWaterMark: 4 });
  assert.equal(stream.write(Buffer.alloc(16)), false);
  const waiting = drained(stream, "close");
  stream.resume(); // the reader catches up
  await waiting;
  assert.equal(stream.listenerCount("drain"), 0);
  assert.equal(stream.listenerCount("close"), 0);
});

test("resolves when the stream ends instead of draining (the peer went away)", async () => {
  const stream = new PassThrough({ highWaterMark: 4 });
  assert.equal(stream.write(Buffer.alloc(16)), false);
  const waiting = drained(stream, "close");
  stream.destroy();
  await waiting;
  assert.equal(stream.listenerCount("drain"), 0);

  const call = new EventEmitter(); // a grpc-js call ends with "cancelled"
  const cancelled = drained(call, "cancelled");
  call.emit("cancelled");
  await cancelled;
  assert.equal(call.listenerCount("drain") + call.listenerCount("cancelled"), 0);
});
