import { createRequire } from "node:module";
import { hostname } from "node:os";
import pino, { type DestinationStream, type Logger, type LoggerOptions } from "pino";
import { setCallLogging } from "../call/context.js";

export type LogLevel = "debug" | "info" | "warn" | "error";
export type LogFormat = "json" | "pretty";

export interface LoggingOptions {
  level: LogLevel;
  format: LogFormat;
  /** Where lines go; stdout when omitted. Tests pass a stream to capture them. */
  destination?: DestinationStream;
}

/** A request logger carries its call's field bag under this key; the mixin reads it on every line. */
const FIELDS = Symbol("callFields");
type WithFields = Logger & { [FIELDS]?: Record<string, unknown> };
const NO_FIELDS = Object.freeze({});

let lastMs = Number.NaN;
let lastTimestamp = "";
let lastSecond = Number.NaN;
/** `,"@timestamp":"YYYY-MM-DDTHH:mm:ss.` of `lastSecond`, or "" when its ISO form is not that shape (years past 9999). */
let secondPrefix = "";

/**
 * The `@timestamp` member (`,"@timestamp":"<toISOString()>"`). A busy service writes several lines per
 * millisecond, so it is made once per ms; and Date's toISOString (a C++ snprintf in V8) once per second, the
 * milliseconds appended to the second's prefix.
 */
export function timestamp(): string {
  const now = Date.now();
  if (now !== lastMs) {
    lastMs = now;
    lastTimestamp = timestampAt(now);
  }
  return lastTimestamp;
}

/** `timestamp()` for the time `now` (ms since the epoch); exported for its test. */
export function timestampAt(now: number): string {
  const second = Math.floor(now / 1000);
  if (second !== lastSecond) {
    lastSecond = second;
    const iso = new Date(second * 1000).toISOString();
    secondPrefix = iso.length === 24 ? `,"@timestamp":"${iso.slice(0, 20)}` : "";
  }
  if (secondPrefix === "") return `,"@timestamp":"${new Date(now).toISOString()}"`;
  const ms = now - second * 1000;
  return `${secondPrefix}${ms < 10 ? "00" : ms < 100 ? "0" : ""}${ms}Z"`;
}

/**
 * Which replica wrote a line: the pod's name in Kubernetes (its HOSTNAME), the host's name elsewhere. With
 * many replicas behind one Service, on-call goes from a line to the replica (its metrics, its restarts).
 */
export function replicaName(env: Record<string, string | undefined> = process.env): string {
  return env.HOSTNAME || hostname();
}

function pinoOptions(level: LogLevel): LoggerOptions {
  return {
    level,
    // No pid (the platform has it); the replica on every line (pino writes it once per logger, not per line).
    base: { replica: replicaName() },
    messageKey: "msg",
    timestamp,
    formatters: { level: (label) => ({ level: label }) },
    // Reads the mutable bag at write time, so fields added late in a call still show.
    mixin: (_merge, _level, logger) => (logger as WithFields)[FIELDS] ?? NO_FIELDS,
    // pino's default merge writes into the mixin object, which here is the call's shared bag.
    mixinMergeStrategy: (merge, mixin) => (mixin === NO_FIELDS ? merge : { ...mixin, ...merge }),
  };
}

function prettyStream(): DestinationStream | undefined {
  try {
    // pino-pretty is a dev dependency: present for `make run`, absent in the production image.
    const pretty = createRequire(import.meta.url)("pino-pretty") as (o: object) => DestinationStream;
    return pretty({ colorize: true, translateTime: "SYS:HH:MM:ss.l", messageKey: "msg", timestampKey: "@timestamp" });
  } catch {
    return undefined;
  }
}

/**
 * Lines are written when this much is buffered, or this long after the first unwritten line, whichever
 * comes first. A write costs the process per call as much as per byte: measured pinned to one CPU as the
 * service runs in the bench (Node 24, ext4), an asynchronous fs.write took 5.9 µs of CPU per KiB in 4 KiB
 * writes, 2.0 in 16 KiB and 0.75 in 64 KiB, most of it on the event loop's thread. A busy service (5,000
 * lines a second) now writes about every 50 ms; a quiet one's lines still go out within 50 ms.
 */
const BATCH_BYTES = 64 * 1024;
const BATCH_MS = 50;

/**
 * A file descriptor or path (stdout by default), written asynchronously (off the request path) and in
 * batches (above). Lines are joined here into one string and handed to sonic-boom as one Buffer per batch
 * (which it writes at once), rather than as a Buffer per line (an allocation and a UTF-8 encode each).
 * flushLogs() writes what is left on exit.
 */
export function batchedDestination(dest: number | string = 1): DestinationStream {
  // Buffer mode: sonic-boom keeps the batches as a list, where string mode re-measures its whole buffer on
  // every write. maxWrite (one write's bytes at most) must exceed minLength.
  const out = pino.destination({ dest, sync: false, minLength: BATCH_BYTES, maxWrite: 4 * BATCH_BYTES, contentMode: "buffer" });
  const write = out.write.bind(out);
  const flushAsync = out.flush.bind(out);
  const flushSync = out.flushSync.bind(out);
  let pending = "";
  let scheduled = false;
  /** Bytes handed to sonic-boom that it has not written yet. */
  let unwritten = 0;
  /** Hands the joined lines to sonic-boom, in order; its return value is sonic-boom's (below its high-water mark). */
  const handOver = (): boolean => {
    if (pending === "") return true;
    const batch = Buffer.from(pending);
    pending = "";
    unwritten += batch.length;
    return write(batch as unknown as string);
  };
  out.on("write", (n: number) => {
    unwritten -= n;
  });
  // sonic-boom ignores a flush() that comes while one of its writes is in flight, and after that write writes
  // the rest only once minLength is buffered again: a quiet service's last lines would wait for more lines
  // that may never come. They go out as soon as the write in flight is done, unless the timer is on its way.
  out.on("drain", () => {
    if (unwritten > 0 && !scheduled) flushAsync();
  });
  const flush = () => {
    scheduled = false;
    try {
      out.flush();
    } catch {
      // Already closed: the process is exiting and flushLogs() wrote the rest.
    }
  };
  out.write = (line: string) => {
    if (!scheduled) {
      scheduled = true;
      setTimeout(flush, BATCH_MS).unref();
    }
    pending += line;
    return pending.length >= BATCH_BYTES ? handOver() : true;
  };
  out.flush = (cb?: (err?: Error) => void) => {
    handOver();
    flushAsync(cb);
  };
  out.flushSync = () => {
    handOver();
    flushSync();
    unwritten = 0;
  };
  return out;
}

function createLogger(options: LoggingOptions): Logger {
  const destination = options.destination ?? (options.format === "pretty" ? prettyStream() : undefined) ?? batchedDestination();
  return pino(pinoOptions(options.level), destination);
}

let root: Logger = createLogger({ level: "info", format: "json", destination: pino.destination({ dest: 1, sync: true }) });

/** Replaces the process logger; called once at start-up from the configuration. */
export function configureLogging(options: LoggingOptions): Logger {
  root = createLogger(options);
  return root;
}

/** The process logger, for code that runs outside a call (start-up, workers, shutdown). */
export function rootLogger(): Logger {
  return root;
}

/** A logger for one call: its lines carry `fields`, and it logs at debug when `debug` is set. */
export function requestLogger(fields: Record<string, unknown>, debug: boolean): Logger {
  // What root.child({}) makes, once: pino's child is an object whose prototype is its parent, plus its own
  // formatters and (here empty) bindings. Each call's logger derives from this one the same way and adds
  // only its field bag, instead of rebuilding the same formatters and bindings per call. The level stays
  // inherited from the process logger unless the call asks for debug.
  if (callTemplate === undefined || callTemplateRoot !== root) {
    callTemplate = root.child({});
    callTemplateRoot = root;
  }
  const child = Object.create(callTemplate) as WithFields;
  child[FIELDS] = fields;
  if (debug) child.level = "debug";
  return child;
}

let callTemplate: Logger | undefined;
let callTemplateRoot: Logger | undefined;

// Every call's `ctx.logger` is a request logger of the process logger.
setCallLogging({ forCall: requestLogger, level: () => root.level });

/** Writes out buffered lines; call before the process exits. */
export function flushLogs(): void {
  const stream = (root as unknown as { [k: symbol]: unknown })[pino.symbols.streamSym] as { flushSync?: () => void } | undefined;
  try {
    stream?.flushSync?.();
  } catch {
    // Nothing buffered or the stream is already closed.
  }
}
