import { setTimeout as sleep } from "node:timers/promises";
import type { Logger } from "pino";
import { Counter, Gauge, type Registry } from "prom-client";
import { backoffDelay, DEFAULT_BACKOFF, type Worker } from "./worker.js";

interface WorkerMetrics {
  started: Counter<"worker">;
  failed: Counter<"worker">;
  restarted: Counter<"worker">;
  running: Gauge<"worker">;
}

function createMetrics(registry: Registry, names: readonly string[]): WorkerMetrics {
  const registers = [registry];
  const labelNames = ["worker"] as const;
  const m: WorkerMetrics = {
    started: new Counter({
      name: "worker_started_total",
      help: "Total number of background worker starts, restarts included.",
      labelNames,
      registers,
    }),
    failed: new Counter({
      name: "worker_failed_total",
      help: "Total number of background worker runs that ended with an error.",
      labelNames,
      registers,
    }),
    restarted: new Counter({
      name: "worker_restarted_total",
      help: "Total number of background worker restarts after an error.",
      labelNames,
      registers,
    }),
    running: new Gauge({
      name: "worker_running",
      help: "Whether the background worker is running now (1) or not (0).",
      labelNames,
      registers,
    }),
  };
  // Every series exists from start-up at 0, so rate() and alerts work before the first event.
  for (const worker of names) {
    m.started.inc({ worker }, 0);
    m.failed.inc({ worker }, 0);
    m.restarted.inc({ worker }, 0);
    m.running.set({ worker }, 0);
  }
  return m;
}

const isAbort = (err: unknown) => err instanceof Error && (err.name === "AbortError" || (err as { code?: string }).code === "ABORT_ERR");

export interface WorkersOptions {
  /** Parent of each worker's logger (`worker` field added). */
  log: Logger;
  /** Where `worker_started_total`, `worker_failed_total`, `worker_restarted_total` and `worker_running` go; none when absent. */
  registry?: Registry | undefined;
}

/** Runs a set of workers: start once, restart on failure with back-off, stop by aborting and awaiting them. */
export class Workers {
  readonly #workers: readonly Worker[];
  readonly #log: Logger;
  readonly #metrics: WorkerMetrics | undefined;
  readonly #controller = new AbortController();
  readonly #runs = new Map<string, Promise<void>>();
  readonly #running = new Set<string>();

  constructor(workers: readonly Worker[], options: WorkersOptions) {
    const seen = new Set<string>();
    for (const w of workers) {
      if (typeof w.name !== "string" || w.name === "") throw new TypeError("a worker needs a name");
      if (seen.has(w.name)) throw new Error(`two workers are named "${w.name}"`);
      seen.add(w.name);
    }
    this.#workers = workers;
    this.#log = options.log;
    this.#metrics = options.registry && workers.length > 0 ? createMetrics(options.registry, [...seen]) : undefined;
  }

  get size(): number {
    return this.#workers.length;
  }

  /** Names of the workers whose `run` is executing now. */
  running(): string[] {
    return [...this.#running];
  }

  /** Starts every worker. Once only; a no-op after `stop()`. */
  start(): void {
    if (this.#runs.size > 0 || this.#controller.signal.aborted) return;
    for (const w of this.#workers) this.#runs.set(w.name, this.#supervise(w, this.#controller.signal));
  }

  /** Aborts every worker's signal and resolves when all have returned (the caller bounds the wait). */
  async stop(): Promise<void> {
    this.#controller.abort();
    await Promise.all(this.#runs.values());
  }

  async #supervise(w: Worker, signal: AbortSignal): Promise<void> {
    const log = this.#log.child({ worker: w.name });
    const labels = { worker: w.name };
    const backoff = { ...DEFAULT_BACKOFF, ...w.backoff };
    let failures = 0;
    for (let attempt = 0; !signal.aborted; attempt++) {
      if (attempt > 0) this.#metrics?.restarted.inc(labels);
      this.#metrics?.started.inc(labels);
      this.#metrics?.running.set(labels, 1);
      this.#running.add(w.name);
      const began = performance.now();
      let error: unknown;
      let failed = false;
      try {
        await w.run(signal, log);
      } catch (err) {
        failed = true;
        error = err;
      } finally {
        this.#running.delete(w.name);
        this.#metrics?.running.set(labels, 0);
      }
      if (signal.aborted) {
        // Stopping: an abort error is the expected way out; anything else is worth a line, not a restart.
        if (failed && !isAbort(error)) log.warn({ err: error }, "worker failed while stopping");
        return;
      }
      if (!failed) {
        log.info("worker finished");
        return;
      }
      this.#metrics?.failed.inc(labels);
      if (performance.now() - began >= backoff.maxMs) failures = 0; // it had been healthy for a while
      const delay = backoffDelay(failures++, backoff);
      log.error({ err: error, restartInMs: delay }, "worker failed; restarting after a back-off");
      try {
        await sleep(delay, undefined, { signal });
      } catch {
        return; // stopped during the back-off
      }
    }
  }
}
