import { createHash, timingSafeEqual } from "node:crypto";

const digest = (value: string): Buffer => createHash("sha256").update(value, "utf8").digest();

/**
 * A check of a presented API key against every configured key, in constant time: both sides are
 * hashed with SHA-256 (so every comparison is 32 bytes, whatever the lengths), and the presented key
 * is compared with each configured key without stopping at a match, so the time taken tells neither
 * which key matched nor how long the keys are. The keys are hashed once, here, at start-up.
 */
export function apiKeyCheck(keys: readonly string[]): (presented: string) => boolean {
  const digests = keys.map(digest);
  return (presented) => {
    const candidate = digest(presented);
    let matched = 0;
    for (const d of digests) matched |= timingSafeEqual(d, candidate) ? 1 : 0;
    return matched === 1;
  };
}
