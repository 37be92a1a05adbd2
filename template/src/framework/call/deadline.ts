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

/** How grpc-js (and Connect's gRPC-Web) read `grpc-timeout`: the first 1–8 digits followed by a unit. */
const GRPC_TIMEOUT = /(\d{1,8})\s*([HMSmun])/;
const UNIT_MS: Record<string, number> = { H: 3_600_000, M: 60_000, S: 1000, m: 1, u: 1e-3, n: 1e-6 };
/** The longest `grpc-timeout` a timer holds (2,147,483,000 ms). */
const LONGEST_GRPC_TIMEOUT = `${Math.floor(MAX_TIMER_MS / 1000)}S`;

/**
 * A `grpc-timeout` header value, or the longest one a timer holds when it asks for more: grpc-js computes the
 * timeout as `(digits * unit) | 0`, which above 2^31-1 ms truncates to a negative or wrong number, and a timer
 * armed with that ends the call at once (a 30-day deadline, `720H`, fails DEADLINE_EXCEEDED immediately).
 */
export function grpcTimeoutWithinTimer(value: string): string {
  const ms = wellFormedTimeoutMs(value) ?? looseTimeoutMs(value);
  return ms !== undefined && ms > MAX_TIMER_MS ? LONGEST_GRPC_TIMEOUT : value;
}

/** The usual case, on every call with a deadline: 1–8 digits and a unit, read without a regex. */
function wellFormedTimeoutMs(value: string): number | undefined {
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

/** Anything else, read as grpc-js reads it (the first 1–8 digits followed by a unit, anywhere). */
function looseTimeoutMs(value: string): number | undefined {
  const match = GRPC_TIMEOUT.exec(value);
  return match ? Number(match[1]) * UNIT_MS[match[2]!]! : undefined;
}
