import { settings } from "./schema.js";

/** Prefixes of the settings' names: an unknown variable starting with one of these may be a misspelt setting. */
export const KNOWN_PREFIXES = [
  "GRPC_",
  "HTTP_",
  "DISABLE_",
  "ENABLE_",
  "LOG_",
  "JWT_",
  "RATE_",
  "PROMETHEUS_",
  "SSE_",
  "TRACE_",
  "DEBUG_",
  "SHUTDOWN_",
  "ADMIN_",
  "GATEWAY_",
  "API_",
  "OVERLOAD_",
  "MAX_IN_FLIGHT_",
] as const;

/** Edit distance (insertions, deletions, substitutions) between two strings. */
export function levenshtein(a: string, b: string): number {
  if (a === b) return 0;
  let previous = Array.from({ length: b.length + 1 }, (_, j) => j);
  for (let i = 1; i <= a.length; i++) {
    const current = [i];
    for (let j = 1; j <= b.length; j++) {
      const substitution = previous[j - 1]! + (a[i - 1] === b[j - 1] ? 0 : 1);
      current[j] = Math.min(previous[j]! + 1, current[j - 1]! + 1, substitution);
    }
    previous = current;
  }
  return previous[b.length]!;
}

export interface SettingTypo {
  /** The variable as set in the environment. */
  variable: string;
  /** The setting it is closest to. */
  suggestion: string;
}

/**
 * Environment variables that are not settings but look like a misspelt one: the name (upper-cased)
 * starts with a known prefix and is at most 2 edits from a setting's name (`GRPC_PROT`,
 * `DISABLE_PROMETEUS`, `grpc_port`). Worth a warning, never an error: other software reads variables too.
 */
export function settingTypos(env: Record<string, string | undefined>, known: readonly string[] = Object.keys(settings)): SettingTypo[] {
  const names = new Set(known);
  const typos: SettingTypo[] = [];
  for (const variable of Object.keys(env).sort()) {
    if (names.has(variable)) continue;
    const upper = variable.toUpperCase();
    if (!KNOWN_PREFIXES.some((p) => upper.startsWith(p))) continue;
    let best: { name: string; distance: number } | undefined;
    for (const name of known) {
      const distance = levenshtein(upper, name);
      if (distance <= 2 && (!best || distance < best.distance)) best = { name, distance };
    }
    if (best) typos.push({ variable, suggestion: best.name });
  }
  return typos;
}
