import assert from "node:assert/strict";
import { test } from "node:test";
import { setFlagsFromString } from "node:v8";
import { runInNewContext } from "node:vm";
import { Code, ConnectError } from "@connectrpc/connect";
import { PartialMessageBudget } from "../overload/partial-messages.js";
import { GuardedBody } from "./guarded-body.js";

async function* chunks(n: number): AsyncGenerator<Uint8Array> {
  for (let i = 0; i < n; i++) yield new Uint8Array([i]);
}

async function* from(...parts: Uint8Array[]): AsyncGenerator<Uint8Array> {
  yield* parts;
}

/** An enveloped message: flag byte, 4-byte big-endian length, `length` bytes. */
function envelope(length: number): Uint8Array {
  const bytes = new Uint8Array(5 + length);
  new DataView(bytes.buffer).setUint32(1, length);
  return bytes;
}

test("a body's chunks come through in order, then its end", async () => {
  const got: number[] = [];
  for await (const chunk of new GuardedBody(chunks(3), undefined)) got.push(chunk[0]!);
  assert.deepEqual(got, [0, 1, 2]);
});

test("a read waiting when the body is aborted fails with the reason, and so does any read after", async () => {
  const body = new GuardedBody(
    (async function* () {
      yield new Uint8Array([1]);
      await new Promise(() => {}); // a client that sends nothing more
    })(),
    undefined,
  );
  assert.deepEqual(await body.next(), { done: false, value: new Uint8Array([1]) });
  const waiting = body.next();
  const reason = new Error("idle");
  body.abort(reason);
  assert.equal(body.aborted, true);
  await assert.rejects(waiting, reason);
  await assert.rejects(body.next(), reason);
});

test("a chunk already read is not held while the call lasts", async () => {
  setFlagsFromString("--expose-gc");
  const gc = runInNewContext("gc") as () => void;
  const body = new GuardedBody(chunks(2), undefined); // never aborted: the call goes on
  let first: WeakRef<Uint8Array> | undefined;
  await (async () => {
    const { value } = await body.next();
    first = new WeakRef(value as Uint8Array);
  })();
  await body.next();
  // A WeakRef keeps its target until the microtasks of the turn that made or read it have run.
  await new Promise((resolve) => setImmediate(resolve));
  gc();
  // Racing each read against an abort promise (Promise.race) kept every chunk in a reaction on that promise.
  assert.equal(first!.deref(), undefined);
  assert.equal((await body.next()).done, true);
});

test("the bytes of a message not yet whole are held against the budget until it completes, across chunks", async () => {
  const budget = new PartialMessageBudget(1_000);
  const message = envelope(100);
  const body = new GuardedBody(from(message.subarray(0, 3), message.subarray(3, 60), message.subarray(60)), budget);
  await body.next();
  assert.equal(budget.held, 3, "part of the prefix");
  await body.next();
  assert.equal(budget.held, 60);
  await body.next();
  assert.equal(budget.held, 0, "whole: given back");
  assert.equal((await body.next()).done, true);
});

test("a message that would pass the budget fails the read with RESOURCE_EXHAUSTED and gives its bytes back", async () => {
  const budget = new PartialMessageBudget(50);
  const message = envelope(100);
  const body = new GuardedBody(from(message.subarray(0, 40), message.subarray(40, 80)), budget);
  await body.next();
  assert.equal(budget.held, 40);
  await assert.rejects(body.next(), (err: unknown) => err instanceof ConnectError && err.code === Code.ResourceExhausted);
  assert.equal(budget.held, 0);
  await assert.rejects(body.next(), ConnectError);
});

test("a body left or ended midway gives back what its message held", async () => {
  const budget = new PartialMessageBudget(1_000);
  const left = new GuardedBody(from(envelope(100).subarray(0, 30), new Uint8Array(1)), budget);
  await left.next();
  assert.equal(budget.held, 30);
  await left.return();
  assert.equal(budget.held, 0, "left by the reader");
  const ended = new GuardedBody(from(envelope(100).subarray(0, 30)), budget);
  await ended.next();
  assert.equal((await ended.next()).done, true);
  assert.equal(budget.held, 0, "ended by the client");
  const aborted = new GuardedBody(from(envelope(100).subarray(0, 30)), budget);
  await aborted.next();
  aborted.abort(new Error("idle"));
  assert.equal(budget.held, 0, "aborted");
});

test("a chunk that comes to a read still waiting after the reader left is not counted", async () => {
  const budget = new PartialMessageBudget(1_000);
  let send: ((chunk: Uint8Array) => void) | undefined;
  const body = new GuardedBody(
    {
      [Symbol.asyncIterator]: () => ({
        next: () => new Promise<IteratorResult<Uint8Array>>((resolve) => (send = (value) => resolve({ done: false, value }))),
      }),
    },
    budget,
  );
  const waiting = body.next();
  await body.return();
  send!(envelope(100).subarray(0, 30));
  await waiting;
  assert.equal(budget.held, 0);
});
