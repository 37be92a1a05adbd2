import { gzipSync } from "node:zlib";
import { inspector } from "./inspector.js";
import { type CallFrame, PprofBuilder } from "./pprof.js";

interface HeapNode {
  id: number;
  callFrame: CallFrame;
  selfSize: number;
  children: HeapNode[];
}

interface SamplingHeapProfile {
  head: HeapNode;
  samples: { size: number; nodeId: number }[];
}

let sampling: Promise<void> | undefined;

/**
 * The sampling heap profile: live allocations sampled since the first heap request
 * (sampling starts then, so it costs nothing before anyone asks).
 */
async function samplingProfile(): Promise<SamplingHeapProfile> {
  const session = inspector();
  sampling ??= session.post("HeapProfiler.startSampling", { samplingInterval: 512 * 1024 }).then(() => {});
  await sampling;
  const { profile } = (await session.post("HeapProfiler.getSamplingProfile")) as unknown as { profile: SamplingHeapProfile };
  return profile;
}

interface Flat {
  node: HeapNode;
  stack: number[];
}

function flatten(head: HeapNode): Flat[] {
  const out: Flat[] = [];
  const walk = (node: HeapNode, stack: number[]) => {
    const here = node === head ? stack : [node.id, ...stack];
    if (node !== head) out.push({ node, stack: here });
    for (const child of node.children) walk(child, here);
  };
  walk(head, []);
  return out;
}

/** How long one computed heap profile (or summary) answers every request. */
const REUSE_MS = 1000;

/**
 * `make()` once for every call within REUSE_MS of its start, in flight or done: building a heap profile holds the
 * event loop for a while (~100–200 ms on a busy heap), and one after another, a flood of requests would starve
 * every other request (50 at once held /healthcheck for 9 s). A profile a second old says the same.
 */
function reused<T>(make: () => Promise<T>): () => Promise<T> {
  let last: { at: number; value: Promise<T> } | undefined;
  return () => {
    const now = performance.now();
    if (last === undefined || now - last.at > REUSE_MS) {
      const value = make();
      const entry = { at: now, value };
      last = entry;
      value.catch(() => {
        if (last === entry) last = undefined; // a failure is not kept
      });
    }
    return last.value;
  };
}

/** Gzipped pprof with in-use objects and bytes per allocation stack (one computation serves every request within a second). */
export const heapProfile = reused(buildHeapProfile);

async function buildHeapProfile(): Promise<Buffer> {
  const profile = await samplingProfile();
  const objects = new Map<number, number>();
  for (const s of profile.samples) objects.set(s.nodeId, (objects.get(s.nodeId) ?? 0) + 1);
  const builder = new PprofBuilder();
  const nodes = flatten(profile.head);
  for (const { node } of nodes) builder.location(node.id, node.callFrame);
  for (const { node, stack } of nodes) if (node.selfSize > 0) builder.sample(stack, [objects.get(node.id) ?? 0, node.selfSize]);
  return gzipSync(
    builder
      .build([
        ["inuse_objects", "count"],
        ["inuse_space", "bytes"],
      ])
      .encode(),
  );
}

/** `?debug=1`: the heap in plain text, the largest allocation sites first (reused within a second, as the profile). */
export const heapSummary = reused(() => buildHeapSummary());

async function buildHeapSummary(limit = 30): Promise<string> {
  const nodes = flatten((await samplingProfile()).head).filter(({ node }) => node.selfSize > 0);
  nodes.sort((a, b) => b.node.selfSize - a.node.selfSize);
  const total = nodes.reduce((sum, { node }) => sum + node.selfSize, 0);
  const mem = process.memoryUsage();
  const lines = [
    `heap profile (sampled live allocations): ${total} bytes in ${nodes.length} sites`,
    `process: rss ${mem.rss} heapTotal ${mem.heapTotal} heapUsed ${mem.heapUsed} external ${mem.external}`,
    "",
    "     bytes  site",
  ];
  for (const { node } of nodes.slice(0, limit)) {
    const f = node.callFrame;
    lines.push(`${String(node.selfSize).padStart(10)}  ${f.functionName || "(anonymous)"} ${f.url}:${f.lineNumber + 1}`);
  }
  return `${lines.join("\n")}\n`;
}
