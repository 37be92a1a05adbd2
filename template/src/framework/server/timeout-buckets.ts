/**
 * Items the newest bucket holds before its settled ones are dropped. Small: a settled item kept is garbage
 * kept (a closed HTTP/2 stream and all it references), which outlives young-generation collections and is
 * promoted; with 1,024 and no compaction as a bucket stops being the newest, a server with one call in flight
 * kept up to ~2,000 closed streams for 5-10 s.
 */
const COMPACT_MIN = 16;

export interface TimeoutBucketsOptions<T> {
  /** An item is looked at once, between this and this plus one slice after it was added. */
  timeoutMs: number;
  /** Sweeps per timeout: more is closer to the timeout, at one wake-up per slice while items wait. */
  slices: number;
  /** Whether an item needs no look any more (closed, or no longer what the look ends): dropped as the newest bucket grows. */
  settled: (item: T) => boolean;
  /** Looks at an item whose time is up; true if it ended it. */
  expire: (item: T) => boolean;
  /** Told after each sweep that ended items, with how many. */
  onExpired?: (ended: number) => void;
}

/**
 * A time limit for many items at the cost of one timer, not one per item: each added item is pushed on the
 * newest of `slices + 1` buckets (an array slot: no allocation per item), and once a slice the oldest bucket
 * is looked at and emptied, so an item is looked at once, between one timeout and one timeout plus a slice
 * after it was added. Settled items are dropped as the newest bucket grows (amortised O(1) an item, at most
 * twice the unsettled ones kept), so a flood of short-lived items is not held until its sweep. The timer runs
 * only while some bucket holds an item, and never keeps the process alive.
 */
export class TimeoutBuckets<T> {
  readonly #options: TimeoutBucketsOptions<T>;
  /** Oldest first; new items go on the last. */
  readonly #buckets: T[][];
  #sweeper: NodeJS.Timeout | undefined;
  #compactAt = COMPACT_MIN;

  constructor(options: TimeoutBucketsOptions<T>) {
    this.#options = options;
    this.#buckets = Array.from({ length: options.slices + 1 }, () => []);
  }

  add(item: T): void {
    const young = this.#buckets[this.#buckets.length - 1]!;
    young.push(item);
    if (young.length >= this.#compactAt) this.#compactAt = Math.max(COMPACT_MIN, 2 * this.#compact(young));
    this.#sweeper ??= this.#startSweeping();
  }

  /** Items held, settled or not (at most about twice the unsettled ones, plus COMPACT_MIN a bucket). */
  get size(): number {
    let n = 0;
    for (const bucket of this.#buckets) n += bucket.length;
    return n;
  }

  /** Stops the sweep and forgets every item. */
  close(): void {
    clearInterval(this.#sweeper);
    this.#sweeper = undefined;
    for (const bucket of this.#buckets) bucket.length = 0;
  }

  /** Drops a bucket's settled items, keeping the order of the others; how many are left. */
  #compact(bucket: T[]): number {
    const { settled } = this.#options;
    let kept = 0;
    for (const i of bucket) if (!settled(i)) bucket[kept++] = i;
    bucket.length = kept;
    return kept;
  }

  #startSweeping(): NodeJS.Timeout {
    const timer = setInterval(() => this.#sweep(), Math.max(1, this.#options.timeoutMs / this.#options.slices));
    timer.unref();
    return timer;
  }

  #sweep(): void {
    const buckets = this.#buckets;
    const oldest = buckets.shift()!;
    const { settled, expire, onExpired } = this.#options;
    let ended = 0;
    for (const item of oldest) if (!settled(item) && expire(item)) ended++;
    oldest.length = 0;
    // The bucket that was newest waits a slice or more for its sweep: its settled items go now.
    this.#compact(buckets[buckets.length - 1]!);
    buckets.push(oldest);
    this.#compactAt = COMPACT_MIN;
    if (ended > 0) onExpired?.(ended);
    // Idle: stop waking up until the next item.
    if (buckets.every((b) => b.length === 0)) {
      clearInterval(this.#sweeper);
      this.#sweeper = undefined;
    }
  }
}
