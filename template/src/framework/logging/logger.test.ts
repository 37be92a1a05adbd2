import assert from "node:assert/strict";
import { once } from "node:events";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { Writable } from "node:stream";
import { after, describe, test } from "node:test";
import { holdEventLoopDuringTests } from "../../../test/framework/support/event-loop.js";
import { batchedDestination, configureLogging, replicaName, requestLogger, rootLogger, timestampAt } from "./logger.js";

holdEventLoopDuringTests(); // the batch timer is unref'd

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

  // Before the fix the last line never came: the timeout turns that into a failure instead of a hang.
  test(
    "a line that arrives while a batch is being written reaches the file after it, with no later line to push it",
    {
      timeout: 10_000,
    },
    async (t) => {
      const { file, out } = await destinationFile("in-flight.log");
      const sonic = out as unknown as NodeJS.EventEmitter;
      t.mock.timers.enable({ apis: ["setTimeout"] });
      const big = `{"big":"${"z".repeat(70_000)}"}\n`;
      out.write(big); // over a batch: sonic-boom starts writing it at once
      out.write('{"msg":"last"}\n');
      // The batch timer fires while that write is still in flight (its callback needs a turn of the event loop).
      t.mock.timers.tick(1000);
      t.mock.timers.reset();
      await once(sonic, "drain"); // the big write is done…
      if (!readFileSync(file, "utf8").endsWith('{"msg":"last"}\n')) await once(sonic, "drain"); // …and then the last line
      assert.equal(readFileSync(file, "utf8"), `${big}{"msg":"last"}\n`);
    },
  );

  test("flush(cb) writes what is still held here and calls back once it is written", async () => {
    const { file, out } = await destinationFile("flush.log");
    out.write('{"msg":"held"}\n');
    await new Promise<void>((resolve, reject) =>
      (out as unknown as { flush(cb: (err?: Error) => void): void }).flush((err) => (err ? reject(err) : resolve())),
    );
    assert.equal(readFileSync(file, "utf8"), '{"msg":"held"}\n');
  });
});

describe("a call's logger", () => {
  const lines: string[] = [];
  const destination = new Writable({
    write(chunk, _encoding, done) {
      lines.push(String(chunk).replace(/"@timestamp":"[^"]+",/, ""));
      done();
    },
  });
  configureLogging({ level: "info", format: "json", destination: destination as never });
  after(() => configureLogging({ level: "info", format: "json", destination: new Writable({ write: (_c, _e, done) => done() }) as never }));

  test("writes the call's fields (read at write time), follows the process level, and logs at debug when the call asks", () => {
    const fields: Record<string, unknown> = { grpcMethod: "/a.B/C", trace: "t1" };
    const log = requestLogger(fields, false);
    log.debug("hidden");
    log.info({ x: 1 }, "shown");
    fields.late = true;
    log.warn("late field");
    requestLogger(fields, true).debug("asked for debug");
    rootLogger().level = "warn";
    requestLogger(fields, false).info("hidden at warn");
    requestLogger(fields, false).error({ e: 2 }, "err");
    requestLogger(fields, false).child({ sub: "y" }).error("from a child");
    rootLogger().level = "info";
    const r = `"replica":${JSON.stringify(replicaName())}`;
    assert.deepEqual(lines, [
      `{"level":"info",${r},"grpcMethod":"/a.B/C","trace":"t1","x":1,"msg":"shown"}\n`,
      `{"level":"warn",${r},"grpcMethod":"/a.B/C","trace":"t1","late":true,"msg":"late field"}\n`,
      `{"level":"debug",${r},"grpcMethod":"/a.B/C","trace":"t1","late":true,"msg":"asked for debug"}\n`,
      `{"level":"error",${r},"grpcMethod":"/a.B/C","trace":"t1","late":true,"e":2,"msg":"err"}\n`,
      `{"level":"error",${r},"sub":"y","grpcMethod":"/a.B/C","trace":"t1","late":true,"msg":"from a child"}\n`,
    ]);
  });

  test("a call's debug level stays its own", () => {
    lines.length = 0;
    const debug = requestLogger({ n: 1 }, true);
    const plain = requestLogger({ n: 2 }, false);
    debug.debug("one");
    plain.debug("two");
    assert.deepEqual(lines, [`{"level":"debug","replica":${JSON.stringify(replicaName())},"n":1,"msg":"one"}\n`]);
  });

  test("every line says which replica wrote it: HOSTNAME (a pod's name in Kubernetes), else the host's name", () => {
    assert.equal(replicaName({ HOSTNAME: "orders-7d9f8b6c4-x2x9k" }), "orders-7d9f8b6c4-x2x9k");
    assert.equal(replicaName({}), os.hostname());
  });
});

describe("the log timestamp", () => {
  test("is toISOString's text for every millisecond of a second, across seconds, days and years, in any order", () => {
    const starts = [0, Date.UTC(2026, 10, 24, 1, 59, 59), Date.UTC(1999, 11, 31, 23, 59, 59), Date.UTC(9999, 11, 31, 23, 59, 59), -1500];
    const times = starts.flatMap((start) => Array.from({ length: 2500 }, (_, i) => start + i));
    times.push(Date.UTC(10_000, 0, 1, 0, 0, 0, 5), Date.UTC(2026, 0, 1), Date.UTC(10_000, 0, 1, 0, 0, 1, 42), 0);
    for (const t of times) assert.equal(timestampAt(t), `,"@timestamp":"${new Date(t).toISOString()}"`, String(t));
  });
});
