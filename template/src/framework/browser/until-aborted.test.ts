import assert from "node:assert/strict";
import { test } from "node:test";
import { setFlagsFromString } from "node:v8";
import { runInNewContext } from "node:vm";
import { untilAborted } from "./until-aborted.js";

async function* chunks(n: number): AsyncGenerator<Uint8Array> {
  for (let i = 0; i < n; i++) yield new Uint8Array([i]);
}

test("a body's chunks come through in order, then its end", async () => {
  const got: number[] = [];
  for await (const chunk of untilAborted(chunks(3), new AbortController().signal)) got.push(chunk[0]!);
  assert.deepEqual(got, [0, 1, 2]);
});

test("a read waiting when the signal aborts fails with the signal's reason, and so does any read after", async () => {
  const idle = new AbortController();
  const body = untilAborted(
    (async function* () {
      yield new Uint8Array([1]);
      await new Promise(() => {}); // a client that sends nothing more
    })(),
    idle.signal,
  );
  assert.deepEqual(await body.next(), { done: false, value: new Uint8Array([1]) });
  const waiting = body.next();
  const reason = new Error("idle");
  idle.abort(reason);
  await assert.rejects(waiting, reason);
  await assert.rejects(body.next(), reason);
});

test("a chunk already read is not held while the call lasts", async () => {
  setFlagsFromString("--expose-gc");
  const gc = runInNewContext("gc") as () => void;
  const signal = new AbortController().signal; // never aborted: the call goes on
  const body = untilAborted(chunks(2), signal);
  let first: WeakRef<Uint8Array> | undefined;
  await (async () => {
    const { value } = await body.next();
    first = new WeakRef(value as Uint8Array);
  })();
  await body.next();
  // A WeakRef keeps its target until the microtasks of the turn that made or read it have run.
  await new Promise((resolve) => setImmediate(resolve));
  gc();
  // Before: the read raced the abort with Promise.race, whose reaction on the abort's promise kept every chunk.
  assert.equal(first!.deref(), undefined);
  assert.equal((await body.next()).done, true);
});
