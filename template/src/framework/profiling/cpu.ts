import { setTimeout as sleep } from "node:timers/promises";
import { gzipSync } from "node:zlib";
import { inspector } from "./inspector.js";
import { type CallFrame, PprofBuilder } from "./pprof.js";

interface CpuNode {
  id: number;
  callFrame: CallFrame;
  children?: number[];
}

interface CpuProfile {
  nodes: CpuNode[];
  samples: number[];
  timeDeltas: number[];
  startTime: number;
  endTime: number;
}

const SAMPLING_INTERVAL_US = 1000;

/** Samples the CPU for `seconds` and returns a gzipped pprof profile (`go tool pprof`, speedscope). */
export async function cpuProfile(seconds: number, signal?: AbortSignal): Promise<Buffer> {
  const session = inspector();
  await session.post("Profiler.enable");
  await session.post("Profiler.setSamplingInterval", { interval: SAMPLING_INTERVAL_US });
  await session.post("Profiler.start");
  await sleep(seconds * 1000, undefined, { signal }).catch(() => {}); // a client that leaves just ends it early
  const { profile } = (await session.post("Profiler.stop")) as { profile: CpuProfile };
  return gzipSync(toPprof(profile).encode());
}

/** V8's call tree and sample list → pprof samples with CPU time per stack. */
export function toPprof(profile: CpuProfile) {
  const parent = new Map<number, number>();
  for (const node of profile.nodes) for (const child of node.children ?? []) parent.set(child, node.id);
  const builder = new PprofBuilder();
  const root = profile.nodes[0]?.id;
  for (const node of profile.nodes) if (node.id !== root) builder.location(node.id, node.callFrame);

  // Time per node: each sample lasts until the next one (the deltas are in microseconds).
  const time = new Map<number, { count: number; micros: number }>();
  profile.samples.forEach((id, i) => {
    const t = time.get(id) ?? { count: 0, micros: 0 };
    t.count++;
    t.micros += profile.timeDeltas[i + 1] ?? SAMPLING_INTERVAL_US;
    time.set(id, t);
  });
  for (const [id, { count, micros }] of time) {
    if (id === root) continue;
    const stack: number[] = [];
    for (let n: number | undefined = id; n !== undefined && n !== root; n = parent.get(n)) stack.push(n);
    builder.sample(stack, [count, micros * 1000]);
  }
  return builder.build(
    [
      ["samples", "count"],
      ["cpu", "nanoseconds"],
    ],
    {
      durationNanos: (profile.endTime - profile.startTime) * 1000,
      period: SAMPLING_INTERVAL_US * 1000,
      periodType: ["cpu", "nanoseconds"],
    },
  );
}
