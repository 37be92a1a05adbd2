import type { DescMessage } from "@bufbuild/protobuf";

/** Every message type of these files, nested ones included. */
export function messagesOf(...files: { messages: DescMessage[] }[]): DescMessage[] {
  const all: DescMessage[] = [];
  const add = (m: DescMessage) => {
    all.push(m);
    m.nestedMessages.forEach(add);
  };
  for (const f of files) f.messages.forEach(add);
  return all;
}

/** A small seeded generator (mulberry32), so a failing test names an input that can be made again. */
export function random(seed: number) {
  let s = seed >>> 0;
  const next = () => {
    s = (s + 0x6d2b79f5) >>> 0;
    let t = s;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
  const int = (n: number) => Math.floor(next() * n);
  const pick = <T>(xs: readonly T[]): T => xs[int(xs.length)]!;
  const chance = (p: number) => next() < p;
  /** One to `max` picks from `xs`. */
  const some = <T>(xs: readonly T[], max = 3): T[] => Array.from({ length: 1 + int(max) }, () => pick(xs));
  return { next, int, pick, chance, some };
}
