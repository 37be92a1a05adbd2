import type { Metric, Registry } from "prom-client";

/**
 * Counter and histogram families whose series are plain objects the hot path updates
 * directly (`series.value++`), rendered by prom-client's registry at scrape time.
 *
 * Why not prom-client's own `counter.labels(...)` children: each `inc()` on one still
 * hashes and validates the label set (~300 ns; ~440 ns for a histogram `observe()`),
 * and a unary call updates five of them. Here a series is looked up once — at start-up
 * for every served method — and an update is an addition.
 */

type Labels = Readonly<Record<string, string>>;
interface Value {
  labels: Record<string, string | number>;
  value: number;
  metricName?: string;
  /** Rendered only in the OpenMetrics format (prom-client's shape). */
  exemplar?: { labelSet: Record<string, string>; value: number; timestamp: number };
}

export class CounterSeries {
  value = 0;
  constructor(readonly labels: Labels) {}
}

export class HistogramSeries {
  /** Per-bucket (not cumulative) counts; observations above the last bound count only in `count`. */
  readonly counts: Float64Array;
  sum = 0;
  count = 0;

  constructor(
    readonly labels: Labels,
    readonly bounds: readonly number[],
  ) {
    this.counts = new Float64Array(bounds.length);
  }

  observe(value: number): void {
    const bounds = this.bounds;
    let i = 0;
    while (i < bounds.length && value > bounds[i]!) i++;
    if (i < bounds.length) this.counts[i]!++;
    this.sum += value;
    this.count++;
  }

  /**
   * `observe`, keeping the trace of this observation as its bucket's exemplar (the last one wins, as in
   * prom-client and the Go client): a latency spike on a dashboard links to a trace of it. Only with tracing
   * on; the arrays are made on first use, so a series never observed this way carries none.
   */
  observeWithExemplar(value: number, traceId: string, spanId: string): void {
    const bounds = this.bounds;
    let i = 0;
    while (i < bounds.length && value > bounds[i]!) i++;
    if (i < bounds.length) this.counts[i]!++;
    this.sum += value;
    this.count++;
    // One slot per bucket and one for +Inf.
    const exemplars = (this.exemplars ??= {
      traceIds: new Array<string | undefined>(bounds.length + 1).fill(undefined),
      spanIds: new Array<string>(bounds.length + 1).fill(""),
      values: new Float64Array(bounds.length + 1),
      timestamps: new Float64Array(bounds.length + 1),
    });
    exemplars.traceIds[i] = traceId;
    exemplars.spanIds[i] = spanId;
    exemplars.values[i] = value;
    exemplars.timestamps[i] = Date.now() / 1000;
  }

  /** Each bucket's last exemplar (index bounds.length: +Inf), when any observation carried one. */
  exemplars: { traceIds: (string | undefined)[]; spanIds: string[]; values: Float64Array; timestamps: Float64Array } | undefined;

  /** The exemplar of bucket `i` in prom-client's shape, if any. */
  exemplarOf(i: number): Value["exemplar"] {
    const e = this.exemplars;
    const traceId = e?.traceIds[i];
    if (e === undefined || traceId === undefined) return undefined;
    return { labelSet: { trace_id: traceId, span_id: e.spanIds[i]! }, value: e.values[i]!, timestamp: e.timestamps[i]! };
  }
}

abstract class Family<S extends { labels: Labels }> {
  readonly aggregator = "sum";
  readonly #series = new Map<string, S>();

  constructor(
    readonly name: string,
    readonly help: string,
    readonly labelNames: readonly string[],
  ) {}

  /** The series for these label values (in `labelNames` order), created at 0 on first use. Not for the hot path. */
  series(...values: string[]): S {
    if (values.length !== this.labelNames.length) throw new Error(`${this.name}: expected ${this.labelNames.length} label values`);
    const key = values.join("\u0000");
    let series = this.#series.get(key);
    if (!series) {
      const labels: Record<string, string> = {};
      this.labelNames.forEach((name, i) => {
        labels[name] = values[i]!;
      });
      series = this.create(Object.freeze(labels));
      this.#series.set(key, series);
    }
    return series;
  }

  all(): IterableIterator<S> {
    return this.#series.values();
  }

  /** Adds the family to a prom-client registry, which calls `get()` on every scrape. */
  registerIn(registry: Registry): this {
    registry.registerMetric(this as unknown as Metric);
    return this;
  }

  protected abstract create(labels: Labels): S;
  abstract get(): Promise<{ name: string; help: string; type: string; aggregator: string; values: Value[] }>;
  /** Zeroes every series, keeping them (the hot path holds references). */
  abstract reset(): void;
}

export class CounterFamily extends Family<CounterSeries> {
  readonly type = "counter";

  protected create(labels: Labels): CounterSeries {
    return new CounterSeries(labels);
  }

  async get() {
    const values: Value[] = [];
    for (const s of this.all()) values.push({ labels: { ...s.labels }, value: s.value });
    return { name: this.name, help: this.help, type: this.type, aggregator: this.aggregator, values };
  }

  reset(): void {
    for (const s of this.all()) s.value = 0;
  }
}

export class HistogramFamily extends Family<HistogramSeries> {
  readonly type = "histogram";
  readonly bounds: readonly number[];

  constructor(name: string, help: string, labelNames: readonly string[], bounds: readonly number[]) {
    super(name, help, labelNames);
    this.bounds = normaliseBounds(bounds);
  }

  protected create(labels: Labels): HistogramSeries {
    return new HistogramSeries(labels, this.bounds);
  }

  async get() {
    const values: Value[] = [];
    const bucket = `${this.name}_bucket`;
    for (const s of this.all()) {
      let cumulative = 0;
      this.bounds.forEach((le, i) => {
        cumulative += s.counts[i]!;
        const exemplar = s.exemplarOf(i);
        values.push({ labels: { ...s.labels, le }, value: cumulative, metricName: bucket, ...(exemplar && { exemplar }) });
      });
      const exemplar = s.exemplarOf(this.bounds.length);
      values.push({ labels: { ...s.labels, le: "+Inf" }, value: s.count, metricName: bucket, ...(exemplar && { exemplar }) });
      values.push({ labels: { ...s.labels }, value: s.sum, metricName: `${this.name}_sum` });
      values.push({ labels: { ...s.labels }, value: s.count, metricName: `${this.name}_count` });
    }
    return { name: this.name, help: this.help, type: this.type, aggregator: this.aggregator, values };
  }

  reset(): void {
    for (const s of this.all()) {
      s.counts.fill(0);
      s.sum = 0;
      s.count = 0;
      s.exemplars = undefined;
    }
  }
}

/** Ascending, without duplicates or infinities (`+Inf` is always implied). */
export function normaliseBounds(bounds: readonly number[]): number[] {
  const sorted = [...new Set(bounds)].filter(Number.isFinite).sort((a, b) => a - b);
  if (sorted.length === 0) throw new Error("a histogram needs at least one finite bucket bound");
  return sorted;
}
