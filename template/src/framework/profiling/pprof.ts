import { Location, Function as PprofFunction, Profile, Sample, StringTable, ValueType } from "pprof-format";

/** A V8 call frame, as both the CPU and the sampling heap profiler report it. */
export interface CallFrame {
  functionName: string;
  url: string;
  lineNumber: number;
  columnNumber: number;
}

/**
 * Builds a pprof Profile from call-tree nodes: each node becomes a location whose stack is
 * the path to the root; functions are shared between nodes of the same frame.
 */
export class PprofBuilder {
  readonly strings = new StringTable();
  readonly #functions = new Map<string, PprofFunction>();
  readonly #locations: Location[] = [];
  readonly #samples: Sample[] = [];

  /** Adds a node's location (ids must be unique and > 0) and returns its id. */
  location(id: number, frame: CallFrame): number {
    const key = `${frame.functionName}\0${frame.url}\0${frame.lineNumber}`;
    let fn = this.#functions.get(key);
    if (!fn) {
      fn = new PprofFunction({
        id: this.#functions.size + 1,
        name: this.strings.dedup(frame.functionName || "(anonymous)"),
        systemName: this.strings.dedup(frame.functionName || "(anonymous)"),
        filename: this.strings.dedup(frame.url),
        startLine: frame.lineNumber + 1,
      });
      this.#functions.set(key, fn);
    }
    // V8 lines are 0-based, pprof's 1-based.
    this.#locations.push(new Location({ id, line: [{ functionId: fn.id, line: frame.lineNumber + 1 }] }));
    return id;
  }

  /** A sample at `stack` (leaf first) with one value per sample type. */
  sample(stack: number[], values: number[]): void {
    this.#samples.push(new Sample({ locationId: stack, value: values }));
  }

  build(
    sampleTypes: [type: string, unit: string][],
    extra: { durationNanos?: number; period?: number; periodType?: [string, string] } = {},
  ): Profile {
    const valueType = ([type, unit]: [string, string]) => new ValueType({ type: this.strings.dedup(type), unit: this.strings.dedup(unit) });
    return new Profile({
      sampleType: sampleTypes.map(valueType),
      sample: this.#samples,
      location: this.#locations,
      function: [...this.#functions.values()],
      stringTable: this.strings,
      timeNanos: BigInt(Date.now()) * 1_000_000n,
      durationNanos: extra.durationNanos ?? 0,
      periodType: extra.periodType ? valueType(extra.periodType) : undefined,
      period: extra.period ?? 0,
    });
  }
}
