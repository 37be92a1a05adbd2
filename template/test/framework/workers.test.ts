/**
 * Background workers: restart with capped exponential back-off, periodic runs with jitter,
 * stop on shutdown (abort, then await), and their metrics, alone and inside a running service.
 */
import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { setTimeout as sleep } from "node:timers/promises";
import pino from "pino";
import { Registry } from "prom-client";
import { defineService, every, type Worker } from "../../src/framework/index.js";
import { startTestServer } from "../../src/framework/testing/harness.js";
import { Workers } from "../../src/framework/workers/supervisor.js";
import { backoffDelay, jittered } from "../../src/framework/workers/worker.js";
import { FixtureService } from "../gen/fixture/v1/fixture_pb.js";
import { fixtureService } from "./fixtures/fixture-service.js";

type Line = Record<string, unknown>;

function capture(): { log: pino.Logger; lines: Line[] } {
  const lines: Line[] = [];
  const log = pino({ level: "debug", base: undefined }, { write: (s: string) => void lines.push(JSON.parse(s) as Line) });
  return { log, lines };
}

/** One sample of a registry's exposition, or undefined if the series is absent. */
async function sample(registry: Registry, name: string, worker: string): Promise<number | undefined> {
  const text = await registry.metrics();
  const m = new RegExp(`^${name}\\{worker="${worker}"\\} (\\S+)$`, "m").exec(text);
  return m ? Number(m[1]) : undefined;
}

async function until(what: string, condition: () => boolean, timeoutMs = 3000): Promise<void> {
  const end = Date.now() + timeoutMs;
  while (!condition()) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await sleep(2);
  }
}

describe("back-off and jitter arithmetic", () => {
  test("the restart delay doubles from the initial delay and stops at the cap", () => {
    const o = { initialMs: 100, maxMs: 1000, factor: 2 };
    assert.deepEqual(
      [0, 1, 2, 3, 4, 5, 20].map((n) => backoffDelay(n, o)),
      [100, 200, 400, 800, 1000, 1000, 1000],
    );
    assert.deepEqual(
      [0, 1, 6, 7].map((n) => backoffDelay(n)),
      [1000, 2000, 60_000, 60_000],
      "defaults: 1 s ×2 up to 60 s",
    );
  });

  test("a jittered wait stays within ± jitter × period, and covers the range", () => {
    let lo = Number.POSITIVE_INFINITY;
    let hi = Number.NEGATIVE_INFINITY;
    for (let i = 0; i < 1000; i++) {
      const w = jittered(1000, 0.25, i / 1000);
      lo = Math.min(lo, w);
      hi = Math.max(hi, w);
    }
    assert.ok(lo >= 750 && lo < 752, `lowest ${lo}`);
    assert.ok(hi < 1250 && hi > 1248, `highest ${hi}`);
    assert.equal(jittered(1000, 0, 0.9), 1000, "no jitter: the exact period");
  });

  test("every() rejects a bad period or jitter", () => {
    assert.throws(() => every(0, () => {}), RangeError);
    assert.throws(() => every(10, () => {}, { jitter: 1.5 }), RangeError);
    assert.throws(() => every(10, () => {}, { jitter: -0.1 }), RangeError);
  });
});

describe("the supervisor", () => {
  test("a throwing worker restarts after 20, 40, 80, 80, 80 ms; the metrics count starts, failures and restarts", async () => {
    const { log, lines } = capture();
    const registry = new Registry();
    const starts: number[] = [];
    let healthy = false;
    const worker: Worker = {
      name: "flaky",
      backoff: { initialMs: 20, maxMs: 80, factor: 2 },
      async run(signal) {
        starts.push(performance.now());
        if (starts.length <= 5) throw new Error(`failure ${starts.length}`);
        healthy = true;
        await new Promise<void>((resolve) => signal.addEventListener("abort", () => resolve(), { once: true }));
      },
    };
    const workers = new Workers([worker], { log, registry });
    assert.equal(await sample(registry, "worker_started_total", "flaky"), 0, "series exist at 0 before start");
    assert.equal(await sample(registry, "worker_running", "flaky"), 0);
    workers.start();
    await until("the sixth start", () => healthy);
    const gaps = starts.slice(1).map((t, i) => t - starts[i]!);
    const expected = [20, 40, 80, 80, 80];
    gaps.forEach((gap, i) => {
      // A restart never comes before its back-off (timers never fire early, bar a rounding millisecond). How late
      // it comes depends on the machine's load, so the delays asked are checked from the log lines below instead.
      assert.ok(gap >= expected[i]! - 1, `gap ${i + 1}: ${gap.toFixed(1)} ms, expected at least ${expected[i]}`);
    });
    assert.equal(await sample(registry, "worker_started_total", "flaky"), 6);
    assert.equal(await sample(registry, "worker_failed_total", "flaky"), 5);
    assert.equal(await sample(registry, "worker_restarted_total", "flaky"), 5);
    assert.equal(await sample(registry, "worker_running", "flaky"), 1);
    assert.deepEqual(workers.running(), ["flaky"]);
    await workers.stop();
    assert.equal(await sample(registry, "worker_running", "flaky"), 0);
    const failures = lines.filter((l) => l.msg === "worker failed; restarting after a back-off");
    assert.equal(failures.length, 5);
    assert.deepEqual(
      failures.map((l) => l.restartInMs),
      expected,
    );
    assert.equal(failures[0]!.worker, "flaky");
    assert.match(String((failures[0]!.err as { message: string }).message), /failure 1/);
  });

  test("a run that stayed up for the back-off cap resets the back-off", async () => {
    const { log, lines } = capture();
    let n = 0;
    const workers = new Workers(
      [
        {
          name: "reset",
          backoff: { initialMs: 5, maxMs: 30, factor: 2 },
          async run(signal) {
            n++;
            if (n === 4) await sleep(35, undefined, { signal }); // healthy for longer than maxMs, then fails again
            if (n <= 4) throw new Error("again");
            await sleep(10_000, undefined, { signal });
          },
        },
      ],
      { log },
    );
    workers.start();
    await until("the fifth start", () => n === 5);
    await workers.stop();
    const delays = lines.filter((l) => l.msg === "worker failed; restarting after a back-off").map((l) => l.restartInMs);
    assert.deepEqual(delays, [5, 10, 20, 5]);
  });

  test("stop() aborts the signal and waits for each worker's clean-up; abort errors are not failures", async () => {
    const { log, lines } = capture();
    const registry = new Registry();
    const events: string[] = [];
    const workers = new Workers(
      [
        {
          name: "slow-cleanup",
          async run(signal) {
            await new Promise<void>((resolve) => signal.addEventListener("abort", () => resolve(), { once: true }));
            events.push("aborted");
            await sleep(80);
            events.push("cleaned up");
          },
        },
        {
          name: "throws-abort",
          async run(signal) {
            await sleep(60_000, undefined, { signal }); // rejects with an AbortError on stop
          },
        },
        { name: "periodic", run: every(5, () => void events.push("tick"), { jitter: 0.5 }) },
      ],
      { log, registry },
    );
    workers.start();
    await until("a few ticks", () => events.filter((e) => e === "tick").length >= 3);
    const began = performance.now();
    await workers.stop();
    assert.ok(performance.now() - began >= 75, "stop() waited for the clean-up");
    assert.deepEqual(
      events.filter((e) => e !== "tick"),
      ["aborted", "cleaned up"],
    );
    const ticks = events.filter((e) => e === "tick").length;
    await sleep(30);
    assert.equal(events.filter((e) => e === "tick").length, ticks, "no tick after stop");
    for (const name of ["slow-cleanup", "throws-abort", "periodic"]) {
      assert.equal(await sample(registry, "worker_failed_total", name), 0, `${name}: no failure`);
      assert.equal(await sample(registry, "worker_restarted_total", name), 0, `${name}: no restart`);
      assert.equal(await sample(registry, "worker_running", name), 0, `${name}: not running`);
    }
    assert.equal(
      lines.find((l) => l.level === 40 || l.level === 50),
      undefined,
      "nothing logged at warn or error",
    );
    workers.start();
    assert.deepEqual(workers.running(), [], "a stopped set does not start again");
  });

  test("a worker that returns before the abort is finished, not restarted", async () => {
    const { log, lines } = capture();
    const registry = new Registry();
    let runs = 0;
    const workers = new Workers([{ name: "one-off", run: () => void runs++ }], { log, registry });
    workers.start();
    await until("the finished line", () => lines.some((l) => l.msg === "worker finished"));
    await sleep(20);
    assert.equal(runs, 1);
    assert.equal(await sample(registry, "worker_started_total", "one-off"), 1);
    assert.equal(await sample(registry, "worker_running", "one-off"), 0);
    await workers.stop();
  });

  test("a periodic worker waits the period ± jitter between calls, starts at once when immediate, and never overlaps", async () => {
    const { log } = capture();
    const events: string[] = [];
    let inside = false;
    let overlapped = false;
    // The random source walks 0 → 0.9, so the waits sweep the whole range 30 ± 15 ms.
    let k = 0;
    const random = () => (k++ % 10) / 10;
    // Records each wait instead of sleeping it (the timer itself is Node's): what is checked is what was asked.
    const wait = async (ms: number) => {
      events.push(`wait ${ms}`);
      await new Promise((resolve) => setImmediate(resolve));
    };
    const workers = new Workers(
      [
        {
          name: "tick",
          run: every(
            30,
            async () => {
              if (inside) overlapped = true;
              inside = true;
              events.push("call");
              await new Promise((resolve) => setImmediate(resolve));
              inside = false;
            },
            { jitter: 0.5, random, immediate: true, wait },
          ),
        },
      ],
      { log },
    );
    workers.start();
    await until("twelve calls", () => events.filter((e) => e === "call").length >= 12, 5000);
    await workers.stop();
    assert.equal(overlapped, false);
    const expected = ["call"];
    for (let i = 0; i < 11; i++) expected.push(`wait ${30 * (1 + 0.5 * ((2 * (i % 10)) / 10 - 1))}`, "call");
    assert.deepEqual(events.slice(0, expected.length), expected);
  });

  test("a periodic worker whose call throws is restarted by the supervisor", async () => {
    const { log, lines } = capture();
    let calls = 0;
    const workers = new Workers(
      [
        {
          name: "bad-tick",
          backoff: { initialMs: 5, maxMs: 5 },
          run: every(
            5,
            () => {
              calls++;
              if (calls % 2 === 1) throw new Error("odd call");
            },
            { jitter: 0 },
          ),
        },
      ],
      { log },
    );
    workers.start();
    await until("six calls", () => calls >= 6);
    await workers.stop();
    assert.ok(lines.filter((l) => l.msg === "worker failed; restarting after a back-off").length >= 3);
  });

  test("names must be present and unique", () => {
    const { log } = capture();
    assert.throws(
      () =>
        new Workers(
          [
            { name: "a", run() {} },
            { name: "a", run() {} },
          ],
          { log },
        ),
      /two workers are named "a"/,
    );
    assert.throws(() => new Workers([{ name: "", run() {} }], { log }), /needs a name/);
  });
});

describe("workers in a running service", () => {
  test("a service's workers run once the servers listen, show in /metrics and are awaited by shutdown", { timeout: 20_000 }, async () => {
    const events: string[] = [];
    const service = defineService(FixtureService, {
      handlers: fixtureService.handlers,
      workers: [
        {
          name: "poller",
          async run(signal) {
            events.push("started");
            await new Promise<void>((resolve) => signal.addEventListener("abort", () => resolve(), { once: true }));
            await sleep(50);
            events.push("stopped");
          },
        },
        {
          name: "crasher",
          backoff: { initialMs: 10, maxMs: 10 },
          run() {
            throw new Error("boom");
          },
        },
      ],
      postStart() {
        events.push("postStart");
      },
      stop() {
        events.push("stop hook");
      },
    });
    const server = await startTestServer([service]);
    let closed = false;
    try {
      assert.deepEqual(events.slice(0, 2), ["started", "postStart"], "workers start before postStart");
      await sleep(60);
      const text = await (await fetch(`${server.httpUrl}/metrics`)).text();
      assert.match(text, /^# TYPE worker_started_total counter$/m);
      assert.match(text, /^# TYPE worker_running gauge$/m);
      assert.match(text, /^worker_running\{worker="poller"\} 1$/m);
      assert.match(text, /^worker_running\{worker="crasher"\} 0$/m);
      assert.match(text, /^worker_started_total\{worker="poller"\} 1$/m);
      const failed = Number(/^worker_failed_total\{worker="crasher"\} (\d+)$/m.exec(text)?.[1]);
      const restarted = Number(/^worker_restarted_total\{worker="crasher"\} (\d+)$/m.exec(text)?.[1]);
      assert.ok(failed >= 2, `crasher failed ${failed} times`);
      assert.ok(restarted === failed || restarted === failed - 1, `restarts ${restarted} follow failures ${failed}`);
      await server.close();
      closed = true;
      assert.deepEqual(
        events.filter((e) => e !== "started"),
        ["postStart", "stopped", "stop hook"],
        "shutdown awaited the worker before the stop hook",
      );
      const messages = server.logs.map((l) => l.msg);
      assert.ok(messages.indexOf("workers stopped") > messages.indexOf("shutting down"));
      assert.ok(messages.indexOf("workers stopped") < messages.indexOf("stopped"));
    } finally {
      if (!closed) await server.close();
    }
  });

  test("a worker given to defineService (the fixture's heartbeat) is registered", { timeout: 20_000 }, async () => {
    const server = await startTestServer([fixtureService]);
    try {
      const text = await (await fetch(`${server.httpUrl}/metrics`)).text();
      assert.match(text, /^worker_running\{worker="heartbeat"\} 1$/m);
    } finally {
      await server.close();
    }
  });
});
