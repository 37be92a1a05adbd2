import { AsyncLocalStorage } from "node:async_hooks";
import { Metadata as GrpcMetadata } from "@grpc/grpc-js";
import pino, { type Logger } from "pino";
import { type CallAbortController, isAborted, LazyAbortController } from "./lazy-abort.js";
import { setChecked } from "./metadata-values.js";
import type { PeerIdentity } from "./peer.js";
import { Code } from "./status.js";
import type { MethodInfo } from "./types.js";

// Bound once: the bundle reads a class imported from a CommonJS package through a getter on every use.
const Metadata = GrpcMetadata;
type Metadata = GrpcMetadata;

/**
 * How a call gets its logger. The call model sits below the logging setup, so the logging module
 * installs itself here when it loads (`setCallLogging`); the fallback, for code that builds a context
 * without it, is a plain pino logger.
 */
export interface CallLogging {
  /** A logger whose lines carry `fields` (read at write time), at debug level when `debug` is set. */
  forCall(fields: Record<string, unknown>, debug: boolean): Logger;
  /** The process's level, which a call returns to when its debug override is turned off. */
  level(): string;
}

let fallback: Logger | undefined;
let logging: CallLogging = {
  forCall(fields, debug) {
    fallback ??= pino({ base: undefined });
    const child = fallback.child(fields);
    if (debug) child.level = "debug";
    return child;
  },
  level: () => fallback?.level ?? "info",
};

export function setCallLogging(callLogging: CallLogging): void {
  logging = callLogging;
}

export type Transport = "grpc" | "http";

export interface CallContextInit {
  method: MethodInfo;
  transport: Transport;
  metadata: Metadata;
  /**
   * A controller the transport already owns (the gateway's, aborted when the HTTP client goes away).
   * Without one, the context makes its own on first use of `signal`: most handlers never read it.
   */
  controller?: CallAbortController;
  /** Absolute deadline in ms since the epoch; Infinity when the caller set none. */
  deadline: number;
  /** Set for calls that arrived through the HTTP gateway. */
  httpPath?: string;
  /** Sends the response header metadata now; `ctx.sendHeader()` calls it at most once. */
  sendHeader?: (header: Metadata) => void;
}

/**
 * Everything a handler may need about its call, the same for gRPC and the gateway.
 * One instance per call; interceptors fill it in as the call goes down the chain.
 * Its private state is in TypeScript-private fields, not #private ones: V8 defines each # field of a new
 * object through a keyed IC call (about 100 instructions each under callgrind), on every call.
 */
export class CallContext {
  readonly method: MethodInfo;
  readonly transport: Transport;
  /** Incoming request metadata (HTTP headers arrive here as metadata too). */
  readonly metadata: Metadata;
  private readonly _controller: CallAbortController;
  deadline: number;
  // The response metadata are made on first use: most calls send only the trace ID back, which
  // setResponseTraceHeader keeps aside until then (the HTTP gateway writes it without any metadata).
  private _responseHeader: Metadata | undefined;
  private _responseTrailer: Metadata | undefined;
  private _traceKey: string | undefined;
  private _traceValue = "";
  /**
   * The log bag: every field here appears on every log line of this call,
   * including the response-time line written after the handler returns.
   */
  readonly fields: Record<string, unknown>;
  /** Verified auth claims, when authentication is on. */
  claims: Readonly<Record<string, unknown>> | undefined;
  /** The client certificate's identity (mTLS, GRPC_TLS_CLIENT_CA_FILE), for gRPC calls that presented a verified one. */
  peer: PeerIdentity | undefined;
  traceId = "";
  private _values: Map<string, unknown> | undefined;
  private _sendHeader: ((header: Metadata) => void) | undefined;
  private _headerSent = false;
  private _debug = false;
  private _logger: Logger | undefined;

  constructor(init: CallContextInit) {
    this.method = init.method;
    this.transport = init.transport;
    this.metadata = init.metadata;
    this._controller = init.controller ?? new LazyAbortController();
    this.deadline = init.deadline;
    this._sendHeader = init.sendHeader;
    this.fields =
      init.httpPath === undefined ? { grpcMethod: init.method.path } : { grpcMethod: init.method.path, httpPath: init.httpPath };
  }

  /** Metadata sent before the first response message (`Grpc-Metadata-*` headers over HTTP). */
  get responseHeader(): Metadata {
    if (this._responseHeader === undefined) {
      this._responseHeader = new Metadata();
      if (this._traceKey !== undefined) setChecked(this._responseHeader, this._traceKey, this._traceValue);
    }
    return this._responseHeader;
  }

  /** Metadata sent with the status (`Grpc-Trailer-*` over HTTP). */
  get responseTrailer(): Metadata {
    this._responseTrailer ??= new Metadata();
    return this._responseTrailer;
  }

  /** The trailer metadata if anyone made it (by reading `responseTrailer`), else undefined: nothing to send. */
  get responseTrailerIfAny(): Metadata | undefined {
    return this._responseTrailer;
  }

  /**
   * `responseHeader.set(key, value)` for the trace ID, without making the metadata before anyone reads
   * it. The caller checked the pair once: `key` is a lowercase metadata key legal for a text value and
   * `value` printable ASCII (Metadata.set's checks are not run for it).
   */
  setResponseTraceHeader(key: string, value: string): void {
    if (this._responseHeader !== undefined) setChecked(this._responseHeader, key, value);
    else {
      this._traceKey = key;
      this._traceValue = value;
    }
  }

  /**
   * For transports that write the response header themselves: the header metadata if it was made,
   * else the one entry setResponseTraceHeader put in it (or undefined for an empty header). Reading
   * `responseHeader` instead gives the same entries, as metadata.
   */
  responseHeaderEntries(): Metadata | readonly [key: string, value: string] | undefined {
    if (this._responseHeader !== undefined) return this._responseHeader;
    return this._traceKey === undefined ? undefined : [this._traceKey, this._traceValue];
  }

  /** A logger whose lines carry this call's fields; it logs at debug when the call asked for it. */
  get logger(): Logger {
    this._logger ??= logging.forCall(this.fields, this._debug);
    return this._logger;
  }

  /** Context key-value options that upstream code set for this call (made on first use). */
  get values(): Map<string, unknown> {
    this._values ??= new Map();
    return this._values;
  }

  /** Aborts when the client goes away, the deadline passes or the server force-stops. */
  get signal(): AbortSignal {
    return this._controller.signal;
  }

  /** Whether the call was aborted; unlike `signal.aborted`, it makes no signal that nobody asked for yet. */
  get aborted(): boolean {
    return isAborted(this._controller);
  }

  /** Why an aborted call ended: its deadline had passed, or else it was cancelled. */
  abortCode(): Code.DEADLINE_EXCEEDED | Code.CANCELLED {
    return Date.now() >= this.deadline ? Code.DEADLINE_EXCEEDED : Code.CANCELLED;
  }

  /** Stops the handler's work: its signal aborts with `reason`. */
  abort(reason: unknown): void {
    this._controller.abort(reason);
  }

  /**
   * Sends `responseHeader` now, before the first response message (a stream's handler may want the
   * client to have them early). Later changes to the header are not sent; the trailer can still change.
   * Transports call it before the first message and with the status, so calling it again is a no-op.
   */
  sendHeader(): void {
    if (this._headerSent) return;
    this._headerSent = true;
    this._sendHeader?.(this.responseHeader);
  }

  /** Whether the response header has gone out. */
  get headerSent(): boolean {
    return this._headerSent;
  }

  get debug(): boolean {
    return this._debug;
  }

  /** Logs this call at debug level whatever `LOG_LEVEL` says (or stops doing so). */
  setDebug(on: boolean): void {
    this._debug = on;
    if (this._logger) this._logger.level = on ? "debug" : logging.level();
  }

  /** Adds a field to every log line of this call. */
  addToContext(key: string, value: unknown): void {
    this.fields[key] = value;
  }

  setTraceId(traceId: string): void {
    this.traceId = traceId;
    this.fields.trace = traceId;
  }
}

const storage = new AsyncLocalStorage<CallContext>();

/** Runs `fn(...args)` with `ctx` as the current call, for code that cannot be handed the context. */
export function runInContext<A extends unknown[], T>(ctx: CallContext, fn: (...args: A) => T, ...args: A): T {
  return storage.run(ctx, fn, ...args);
}

/** The context of the call being served, or undefined outside a call. */
export function currentContext(): CallContext | undefined {
  return storage.getStore();
}

/** Adds a field to every log line of the current call; a no-op outside a call. */
export function addToContext(key: string, value: unknown): void {
  storage.getStore()?.addToContext(key, value);
}
