import pino, { type DestinationStream, type Logger } from "pino";
import { rootLogger, timestamp } from "./logger.js";

/** Where pino keeps a logger's destination; read once (the bundle reads pino's exports through a getter on every use). */
const STREAM = pino.symbols.streamSym;
/** Where pino keeps a logger's bindings as JSON text (`,"replica":"…"`), written after the time on every line. */
const CHINDINGS = pino.symbols.chindingsSym;

/** The root logger's bindings as pino writes them (`""` when none). */
function bindingsOf(root: Logger): string {
  return ((root as unknown as Record<symbol, string | undefined>)[CHINDINGS] as string | undefined) ?? "";
}

/** Keys the record itself owns: a bag that sets one of them goes through pino, which settles the clash. */
const RESERVED = new Set(["level", "@timestamp", "msg", "replica"]);

/** What JSON.stringify escapes in a string: `"`, `\`, control characters, and (when lone) surrogates. */
// oxlint-disable-next-line no-control-regex -- control characters are what JSON escapes
const ESCAPED = /["\\\u0000-\u001f\ud800-\udfff]/;

/**
 * `JSON.stringify(value)` for a string, byte for byte: most values (method paths, trace IDs, code names)
 * need no escaping, and quoting them is cheaper than the serialiser's general path. A value with a
 * character JSON escapes, or any surrogate (lone ones are escaped, pairs not), takes JSON.stringify.
 */
export function jsonString(value: string): string {
  return ESCAPED.test(value) ? JSON.stringify(value) : `"${value}"`;
}

/** Below this many thousandths, `String(n / 1000)` is never in exponent form and a double holds n exactly. */
const THOUSANDTHS_LIMIT = 1e15;

/**
 * `JSON.stringify(value)` for a number: NaN and the infinities are null. Durations (`took_ms`) are rounded to
 * thousandths, and V8 turns a fractional number into a string through a runtime call (a shortest round-trip
 * search) where a small integer's string comes from a cache. So a value that is n / 1000 is written from n's
 * digits: the shortest decimal that reads back as n / 1000 is n's own, with trailing zeros dropped (checked
 * against `String` for every thousandth up to 10 s in the tests).
 */
export function jsonNumber(value: number): string {
  const thousandths = Math.round(value * 1000);
  const frac = thousandths % 1000;
  if (thousandths <= 0 || thousandths >= THOUSANDTHS_LIMIT || thousandths / 1000 !== value || frac === 0)
    return Number.isFinite(value) ? String(value) : "null";
  const whole = (thousandths - frac) / 1000;
  if (frac % 100 === 0) return `${whole}.${frac / 100}`;
  if (frac % 10 === 0) return `${whole}.${frac < 100 ? "0" : ""}${frac / 10}`;
  return `${whole}.${frac < 10 ? "00" : frac < 100 ? "0" : ""}${frac}`;
}

/** The destination pino writes the root logger's lines to. */
function destinationOf(root: Logger): DestinationStream {
  return (root as unknown as Record<symbol, DestinationStream>)[STREAM] as DestinationStream;
}

/** `,"msg":<msg>}` and the newline, per message: a service writes a handful of messages this way. */
const tails = new Map<string, string>();
function tailOf(msg: string): string {
  let tail = tails.get(msg);
  if (tail === undefined) {
    tail = `,"msg":${JSON.stringify(msg)}}\n`;
    if (tails.size < 100) tails.set(msg, tail);
  }
  return tail;
}

/**
 * A bag key's JSON (`,"key":`), and the member it last made from a string value: most calls of a service log
 * the same method path, which is then quoted once, not on every line.
 */
class BagKey {
  readonly prefix: string;
  last: string | undefined;
  member = "";
  constructor(key: string) {
    this.prefix = `,${JSON.stringify(key)}:`;
  }

  string(value: string): string {
    if (value !== this.last) {
      this.last = value;
      this.member = this.prefix + jsonString(value);
    }
    return this.member;
  }
}

/** The keys of bags seen so far; a service uses a handful. */
const bagKeys = new Map<string, BagKey>();
function bagKey(key: string): BagKey {
  let k = bagKeys.get(key);
  if (k === undefined) {
    k = new BagKey(key);
    if (bagKeys.size < 1000) bagKeys.set(key, k);
  }
  return k;
}

/**
 * The members of the bag `fields` as JSON text (`,"k":v…`), or undefined when a value is not a plain string,
 * number or boolean, or a key is one of `taken` (the line's own keys) or of `extra`: those lines need pino's
 * general path.
 */
function bagMembers(fields: Record<string, unknown>, taken: ReadonlySet<string>, extra?: object): string | undefined {
  let out = "";
  const keys = Object.keys(fields);
  for (let i = 0; i < keys.length; i++) {
    const key = keys[i] as string;
    const value = fields[key];
    if (value === undefined) continue; // as pino: an undefined field is left out
    if (taken.has(key) || (extra !== undefined && key in extra)) return undefined;
    if (typeof value === "string") out += bagKey(key).string(value);
    else if (typeof value === "number") out += bagKey(key).prefix + jsonNumber(value);
    else if (typeof value === "boolean") out += `${bagKey(key).prefix}${value}`;
    else return undefined;
  }
  return out;
}

/**
 * The members of `fields` then `extra` as JSON text (`,"k":v…`), or undefined when a value is not a plain
 * string, number or boolean, or a key would appear twice: those lines need pino's general path.
 */
function members(fields: Record<string, unknown>, extra: Record<string, string | number>): string | undefined {
  let out = bagMembers(fields, RESERVED, extra);
  if (out === undefined) return undefined;
  for (const key in extra) {
    const value = extra[key] as string | number;
    out += `,"${key}":${typeof value === "string" ? jsonString(value) : jsonNumber(value)}`;
  }
  return out;
}

/** What a call offers for logging (the CallContext). */
export interface CallLog {
  readonly fields: Record<string, unknown>;
  /** The call logs at debug whatever LOG_LEVEL says. */
  readonly debug: boolean;
  /** The call's logger: its lines carry `fields`. */
  readonly logger: Logger;
}

/**
 * Writes the call's info line `msg` with its field bag plus `extra`: the record `call.logger.info(extra, msg)`
 * writes. Every call writes one (the response time), so when the bag holds only plain values — the usual
 * case — it skips pino's general path (a child logger, the mixin merge, per-key serialisation: about 4 µs)
 * and hands one prebuilt string to the same destination. `extra` keys must be plain identifiers.
 */
export function writeCallLine(call: CallLog, extra: Record<string, string | number>, msg: string): void {
  const root = rootLogger();
  if (!call.debug && !root.isLevelEnabled("info")) return;
  const body = members(call.fields, extra);
  if (body === undefined) {
    call.logger.info(extra, msg);
    return;
  }
  destinationOf(root).write(`{"level":"info"${timestamp()}${bindingsOf(root)}${body}${tailOf(msg)}`);
}

/** The keys of a response-time line's own record. */
const RESPONSE_TIME_KEYS = new Set([...RESERVED, "grpcCode", "took_ms"]);
const RESPONSE_TIME_TAIL = tailOf("response time");
/** `,"grpcCode":"<code>","took_ms":` by code name (a fixed set of names). */
const codeMembers = new Map<string, string>();

/**
 * The unary response-time line, `writeCallLine(call, { grpcCode, took_ms }, "response time")` byte for byte, the
 * line every call writes: the code's members are made once per code, and the bag's method path once per method.
 */
export function writeResponseTimeLine(call: CallLog, grpcCode: string, took_ms: number): void {
  const root = rootLogger();
  if (!call.debug && !root.isLevelEnabled("info")) return;
  const body = bagMembers(call.fields, RESPONSE_TIME_KEYS);
  if (body === undefined) {
    call.logger.info({ grpcCode, took_ms }, "response time");
    return;
  }
  let code = codeMembers.get(grpcCode);
  if (code === undefined) {
    code = `,"grpcCode":${jsonString(grpcCode)},"took_ms":`;
    if (codeMembers.size < 100) codeMembers.set(grpcCode, code);
  }
  destinationOf(root).write(`{"level":"info"${timestamp()}${bindingsOf(root)}${body}${code}${jsonNumber(took_ms)}${RESPONSE_TIME_TAIL}`);
}
