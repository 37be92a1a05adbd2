import { Code, GrpcError } from "./status.js";

/**
 * The longest delay a Node timer holds: 2^31-1 ms, about 24.8 days. Beyond it `setTimeout` does not
 * wait longer, it fires at once (with a TimeoutOverflowWarning), so a 30-day deadline would expire
 * immediately. Every deadline timer clamps to it: such a deadline ends after 24.8 days instead.
 */
export const MAX_TIMER_MS = 2 ** 31 - 1;

/** The delay of a timer for an absolute `deadline` (ms since the epoch): 0 once it has passed, at most MAX_TIMER_MS. */
export function timerDelay(deadline: number): number {
  return Math.min(Math.max(0, deadline - Date.now()), MAX_TIMER_MS);
}

/** The deadline `ms` from now (none when undefined), no further away than a timer holds. */
export function deadlineIn(ms: number | undefined): number {
  return ms === undefined ? Number.POSITIVE_INFINITY : Date.now() + Math.min(ms, MAX_TIMER_MS);
}

/** gRPC's timeout units (`grpc-timeout: 30S`) in milliseconds. */
const UNIT_MS: Record<string, number> = { H: 3_600_000, M: 60_000, S: 1000, m: 1, u: 1e-3, n: 1e-6 };
/** How grpc-js (and Connect's gRPC-Web) read `grpc-timeout`: the first 1–8 digits followed by a unit, anywhere. */
const LOOSE_GRPC_TIMEOUT = /(\d{1,8})\s*([HMSmun])/;
/** The longest `grpc-timeout` a timer holds (2,147,483,000 ms). */
const LONGEST_GRPC_TIMEOUT = `${Math.floor(MAX_TIMER_MS / 1000)}S`;

/**
 * A `grpc-timeout` value in gRPC's wire format, 1–8 digits and a unit of H M S m u n, as milliseconds;
 * undefined for anything else. Read without a regex: it runs on every call that has a deadline.
 */
export function grpcTimeoutMs(value: string): number | undefined {
  const last = value.length - 1;
  if (last < 1 || last > 8) return undefined;
  let digits = 0;
  for (let i = 0; i < last; i++) {
    const d = value.charCodeAt(i) - 48;
    if (d < 0 || d > 9) return undefined;
    digits = digits * 10 + d;
  }
  const unit = UNIT_MS[value[last]!];
  return unit === undefined ? undefined : digits * unit;
}

/**
 * The `Grpc-Timeout` header of an HTTP request (gateway, gRPC-Web, WebSocket) as milliseconds, or undefined
 * when absent. Anything but gRPC's wire format is INVALID_ARGUMENT.
 */
export function parseGrpcTimeout(value: string | string[] | undefined): number | undefined {
  if (value === undefined) return undefined;
  const ms = typeof value === "string" ? grpcTimeoutMs(value.trim()) : undefined;
  if (ms === undefined)
    throw new GrpcError(Code.INVALID_ARGUMENT, `invalid Grpc-Timeout header "${value}": want 1-8 digits and a unit of H, M, S, m, u or n`);
  return ms;
}

/**
 * A `grpc-timeout` header value, or the longest one a timer holds when it asks for more: grpc-js computes the
 * timeout as `(digits * unit) | 0`, which above 2^31-1 ms truncates to a negative or wrong number, and a timer
 * armed with that ends the call at once (a 30-day deadline, `720H`, fails DEADLINE_EXCEEDED immediately).
 */
export function grpcTimeoutWithinTimer(value: string): string {
  const ms = grpcTimeoutMs(value) ?? looseTimeoutMs(value);
  return ms !== undefined && ms > MAX_TIMER_MS ? LONGEST_GRPC_TIMEOUT : value;
}

/** Anything else, read as grpc-js reads it (the first 1–8 digits followed by a unit, anywhere). */
function looseTimeoutMs(value: string): number | undefined {
  const match = LOOSE_GRPC_TIMEOUT.exec(value);
  return match ? Number(match[1]) * UNIT_MS[match[2]!]! : undefined;
}

/** Units for writing a `grpc-timeout`, finest first (u and n would only add digits). */
const WRITE_UNITS: [unit: string, ms: number][] = [
  ["m", 1],
  ["S", 1000],
  ["M", 60_000],
  ["H", 3_600_000],
];

/** `grpc-timeout` for `ms` milliseconds: at most 8 digits, rounded up, in the finest unit that fits. */
export function grpcTimeout(ms: number): string {
  for (const [unit, factor] of WRITE_UNITS) {
    const amount = Math.ceil(Math.max(0, ms) / factor);
    if (amount < 1e8) return `${amount}${unit}`;
  }
  return "99999999H";
}
