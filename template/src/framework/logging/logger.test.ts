import assert from "node:assert/strict";
import { once } from "node:events";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { after, describe, test } from "node:test";
import { batchedDestination } from "./logger.js";

const dir = mkdtempSync(path.join(os.tmpdir(), "batched-"));
after(() => rmSync(dir, { recursive: true, force: true }));

/** A batched destination on a new file, once the file is open. */
async function destinationFile(name: string) {
  const file = path.join(dir, name);
  const out = batchedDestination(file);
  await once(out as unknown as NodeJS.EventEmitter, "ready");
  return { file, out };
}

describe("the batched log destination", () => {
  test("writes every line, byte for byte and in order, across batches, with multi-byte text", async () => {
    const { file, out } = await destinationFile("order.log");
    const lines = Array.from({ length: 2000 }, (_, i) => `{"n":${i},"text":"é ✓ ${"x".repeat(i % 97)}"}\n`);
    for (const line of lines) out.write(line);
    // A line longer than a batch on its own.
    const long = `{"long":"${"y".repeat(10_000)}"}\n`;
    out.write(long);
    // As the service does on exit (lifecycle's writesDone): a synchronous flush only once no write is in flight.
    const sonic = out as unknown as NodeJS.EventEmitter & { _writing: boolean; flushSync(): void };
    while (sonic._writing) await once(sonic, "write");
    sonic.flushSync();
    assert.equal(readFileSync(file, "utf8"), lines.join("") + long);
  });

  test("a quiet service's few lines reach the file without a flush from anyone (the batch timer)", async () => {
    const { file, out } = await destinationFile("quiet.log");
    out.write('{"msg":"one"}\n');
    out.write('{"msg":"two"}\n');
    // sonic-boom emits 'write' once the timer's flush has written the batch.
    await once(out as unknown as NodeJS.EventEmitter, "write");
    assert.equal(readFileSync(file, "utf8"), '{"msg":"one"}\n{"msg":"two"}\n');
  });

  test("flush(cb) writes what is still held here and calls back once it is written", async () => {
    const { file, out } = await destinationFile("flush.log");
    out.write('{"msg":"held"}\n');
    await new Promise<void>((resolve, reject) =>
      (out as unknown as { flush(cb: (err?: Error) => void): void }).flush((err) => (err ? reject(err) : resolve())),
    );
    assert.equal(readFileSync(file, "utf8"), '{"msg":"held"}\n');
  });
});
