import {
  type ClientHttp2Session,
  type ClientHttp2Stream,
  connect,
  constants,
  type IncomingHttpHeaders,
  type OutgoingHttpHeaders,
  type SecureClientSessionOptions,
} from "node:http2";
import { connect as netConnect } from "node:net";
import type { SecureContext } from "node:tls";
import type { Metadata } from "@grpc/grpc-js";
import { grpcTimeout, MAX_TIMER_MS } from "../call/deadline.js";
import { drained } from "../call/drained.js";
import { Code, GrpcError } from "../call/status.js";
import { DEFAULT_MAX_RECEIVE_LENGTH, encodeFrame, FrameDecoder } from "./grpc-frames.js";
import { addHeaders, statusFromClose, statusFromTrailers } from "./grpc-wire-status.js";

/**
 * The gateway's gRPC client of its own server: calls of every kind straight on node:http2, one long-lived session (opened again after it closes). It skips grpc-js's client
 * layers (name resolution, load balancing, subchannels, filters), which cost most of a tcp or unix
 * gateway request, and reports headers, trailers and statuses as grpc-js's client does.
 */

/**
 * How the gateway trusts a TLS server: exactly this context, and the name to verify and send as SNI. Read at each
 * new connection, so the server's reloaded certificate (a new context put here) is trusted from then on.
 */
export interface WireTls {
  secureContext: SecureContext;
  serverName?: string;
}

export interface WireClientOptions {
  tls?: WireTls;
  /** Largest response message accepted; 4 MiB by default, as grpc-js's client. */
  maxReceiveLength?: number;
}

/** One call: the serialised request (or requests), and where the response metadata goes. */
export interface WireRequest {
  /** `/<package.Service>/<Method>` */
  path: string;
  metadata: Metadata;
  /** The request of a unary or server-streaming call. */
  message?: Uint8Array;
  /**
   * The requests of a client-streaming or bidi call, sent as they come, each once the server can take
   * it (HTTP/2 flow control); their end half-closes the call. If it throws, the call is cancelled
   * and ends with that error. Once the call has ended it is no longer read, and `return()`ed.
   */
  messages?: AsyncIterator<Uint8Array>;
  /** Absolute, in ms since the epoch; Infinity for none. */
  deadline: number;
  /** Aborting it cancels the call (RST_STREAM CANCEL). */
  signal: AbortSignal;
  /** Filled with the response headers. */
  header: Metadata;
  /** Filled with the trailers (all of a trailers-only response), without grpc-status and grpc-message. */
  trailer: Metadata;
  /** Called once `header` is filled, when the server sends its headers (not for a trailers-only answer). */
  onHeader?: () => void;
}

export type UnaryCallback<T> = (error: GrpcError | undefined, message: T | undefined) => void;

/** Queued stream messages beyond which the HTTP/2 stream is paused (flow control then holds the server). */
const HIGH_WATER = 16;
/** Errors of request() that a fresh session cures. */
const STALE_SESSION = new Set(["ERR_HTTP2_INVALID_SESSION", "ERR_HTTP2_GOAWAY_SESSION", "ERR_HTTP2_OUT_OF_STREAMS"]);

export class GrpcWireClient {
  readonly #authority: string;
  readonly #options: SecureClientSessionOptions;
  readonly #tls: WireTls | undefined;
  readonly #maxReceiveLength: number;
  #session: ClientHttp2Session | undefined;
  /** Calls in progress: the session holds the process open only while there are some, as grpc-js's channel. */
  #active = 0;
  #closed = false;

  constructor(target: string, options: WireClientOptions = {}) {
    this.#maxReceiveLength = options.maxReceiveLength ?? DEFAULT_MAX_RECEIVE_LENGTH;
    // grpc-js's client lifts nghttp2's per-session memory cap too: 1,000 streams on one session must not be refused.
    const base: SecureClientSessionOptions = { maxSessionMemory: Number.MAX_SAFE_INTEGER, settings: { enablePush: false } };
    if (target.startsWith("unix:")) {
      const path = target.slice("unix:".length).replace(/^\/\/(?=\/)/, "");
      this.#authority = "http://localhost";
      this.#options = { ...base, createConnection: () => netConnect(path) };
    } else if (options.tls) {
      this.#authority = `https://${target}`;
      this.#options = base;
      this.#tls = options.tls;
    } else {
      this.#authority = `http://${target}`;
      this.#options = base;
    }
  }

  /** A unary (or, with `messages`, client-streaming) call; `callback` runs once, after the trailers, with the decoded message or the status. */
  unary<T>(req: WireRequest, decode: (bytes: Buffer) => T, callback: UnaryCallback<T>): void {
    let message: T | undefined;
    let received = false;
    const onMessage = (bytes: Buffer) => {
      if (received) throw new GrpcError(Code.UNIMPLEMENTED, "Too many responses received");
      received = true;
      message = decode(bytes);
    };
    const onEnd = (error: GrpcError | undefined) => {
      if (error) callback(error, undefined);
      else if (!received) callback(new GrpcError(Code.UNIMPLEMENTED, "No message received", { metadata: req.trailer }), undefined);
      else callback(undefined, message);
    };
    new WireCall(this, req, onMessage, onEnd).start();
  }

  /**
   * A server-streaming (or, with `messages`, bidi) call, started at once. The iterable yields the decoded messages and throws the
   * status if it is not OK; leaving it early cancels the call. A slow reader pauses the HTTP/2 stream.
   */
  serverStream<T>(req: WireRequest, decode: (bytes: Buffer) => T): AsyncGenerator<T> {
    const queue: T[] = [];
    let ended = false;
    let failure: GrpcError | undefined;
    let wake: (() => void) | undefined;
    const notify = () => {
      const w = wake;
      wake = undefined;
      w?.();
    };
    const call = new WireCall(
      this,
      req,
      (bytes) => {
        queue.push(decode(bytes));
        if (queue.length >= HIGH_WATER) call.pause();
        notify();
      },
      (error) => {
        ended = true;
        failure = error;
        notify();
      },
    );
    call.start();
    return (async function* read() {
      try {
        for (;;) {
          if (queue.length > 0) {
            const message = queue.shift()!;
            if (queue.length < HIGH_WATER / 2) call.resume();
            yield message;
          } else if (ended) {
            if (failure) throw failure;
            return;
          } else {
            await new Promise<void>((resolve) => (wake = resolve));
          }
        }
      } finally {
        call.cancel(); // no-op once ended; stops the server side if the reader left early
      }
    })();
  }

  /** Lets calls in progress finish; later calls fail with UNAVAILABLE. */
  close(): void {
    this.#closed = true;
    this.#session?.close();
    this.#session = undefined;
  }

  /** @internal A stream for one call on the current session (a new one if it closed, went away or ran out of streams). */
  request(headers: OutgoingHttpHeaders): { stream: ClientHttp2Stream; session: ClientHttp2Session } {
    if (this.#closed) throw new GrpcError(Code.UNAVAILABLE, "the gateway's gRPC client is closed");
    let session = this.#current();
    try {
      return { stream: session.request(headers), session };
    } catch (err) {
      if (!STALE_SESSION.has((err as NodeJS.ErrnoException).code ?? "")) throw err;
      this.#drop(session);
      session = this.#current();
      return { stream: session.request(headers), session };
    }
  }

  /** @internal */
  get maxReceiveLength(): number {
    return this.#maxReceiveLength;
  }

  /** @internal Counts a call in or out; the session is referenced only while calls are in progress. */
  track(delta: 1 | -1): void {
    this.#active += delta;
    if (delta === 1 && this.#active === 1) this.#session?.ref();
    else if (this.#active === 0) this.#session?.unref();
  }

  #current(): ClientHttp2Session {
    const existing = this.#session;
    if (existing && !existing.closed && !existing.destroyed) return existing;
    const tls = this.#tls;
    const session = connect(
      this.#authority,
      tls ? { ...this.#options, secureContext: tls.secureContext, servername: tls.serverName } : this.#options,
    );
    // A failed or dropped connection reaches each of its streams as an error or a reset; this only keeps it from being thrown.
    session.on("error", ignore);
    session.once("close", () => this.#drop(session));
    session.once("goaway", () => this.#drop(session));
    if (this.#active === 0) session.unref();
    this.#session = session;
    return session;
  }

  #drop(session: ClientHttp2Session): void {
    if (this.#session !== session) return;
    this.#session = undefined;
    if (!session.closed) session.close();
  }
}

function ignore(): void {}

const EMPTY = new Uint8Array(0);

const CALL = Symbol("wire call");
type CallStream = ClientHttp2Stream & { [CALL]: WireCall };

/** One call on one HTTP/2 stream; the listeners are shared functions that find the call on the stream. */
class WireCall {
  stream: ClientHttp2Stream | undefined;
  session: ClientHttp2Session | undefined;
  readonly decoder: FrameDecoder;
  httpStatus = 0;
  /** The first status known wins (a local cancel over late trailers, as in grpc-js): undefined until then, null for OK. */
  final: GrpcError | null | undefined;
  streamError: Error | undefined;
  timer: NodeJS.Timeout | undefined;
  paused = false;
  finished = false;
  retried = false;
  readonly #onAbort = () => this.fail(new GrpcError(Code.CANCELLED, "Cancelled on client", { metadata: this.req.trailer }));

  constructor(
    readonly client: GrpcWireClient,
    readonly req: WireRequest,
    readonly onMessage: (bytes: Buffer) => void,
    readonly onEnd: (error: GrpcError | undefined) => void,
  ) {
    this.decoder = new FrameDecoder(client.maxReceiveLength);
  }

  start(): void {
    const { req } = this;
    if (req.signal.aborted) {
      this.#endEarly(Code.CANCELLED, "Cancelled on client");
      return;
    }
    const headers = req.metadata.toHttp2Headers();
    headers[":method"] = "POST";
    headers[":path"] = req.path;
    headers["content-type"] = "application/grpc";
    headers.te = "trailers";
    if (req.deadline !== Number.POSITIVE_INFINITY) {
      const ms = req.deadline - Date.now();
      if (ms <= 0) {
        this.#endEarly(Code.DEADLINE_EXCEEDED, "Deadline exceeded");
        return;
      }
      headers["grpc-timeout"] = grpcTimeout(ms);
      // Longer than a timer holds: left to the server, which clamps it.
      if (ms <= MAX_TIMER_MS) this.timer = setTimeout(onDeadline, ms, this);
    }
    let stream: ClientHttp2Stream;
    try {
      ({ stream, session: this.session } = this.client.request(headers));
    } catch (err) {
      clearTimeout(this.timer);
      if (err instanceof GrpcError) this.#endEarly(err.code, err.message);
      else {
        const code = String((err as NodeJS.ErrnoException).code).startsWith("ERR_HTTP2_") ? Code.UNAVAILABLE : Code.INTERNAL;
        this.#endEarly(code, `cannot start the call: ${(err as Error).message}`);
      }
      return;
    }
    this.stream = stream;
    (stream as CallStream)[CALL] = this;
    this.client.track(1);
    stream.on("response", onResponse);
    stream.on("data", onData);
    stream.on("trailers", onTrailers);
    stream.on("error", onError);
    stream.on("close", onClose);
    req.signal.addEventListener("abort", this.#onAbort);
    if (req.messages) {
      this.retried = true; // requests already read cannot be sent again
      void this.#send(stream, req.messages);
    } else stream.end(encodeFrame(req.message ?? EMPTY));
  }

  /** Sends each request as it comes, waiting for the server to take the previous ones; then half-closes. */
  async #send(stream: ClientHttp2Stream, messages: AsyncIterator<Uint8Array>): Promise<void> {
    try {
      for (;;) {
        const step = await messages.next();
        if (this.final !== undefined || stream.destroyed) break; // answered early, cancelled or gone: the rest is not sent
        if (step.done) {
          stream.end();
          return;
        }
        if (!stream.write(encodeFrame(step.value))) await drained(stream, "close");
      }
    } catch (err) {
      // The requests could not be read (bad input, the HTTP client left): the call ends with that error.
      this.fail(err instanceof GrpcError ? err : new GrpcError(Code.INTERNAL, `cannot read the requests: ${(err as Error).message}`));
    }
    messages.return?.()?.catch(ignore);
  }

  response(headers: IncomingHttpHeaders, flags: number): void {
    this.httpStatus = Number(headers[":status"]);
    if (flags & constants.NGHTTP2_FLAG_END_STREAM) this.trailers(headers);
    else {
      addHeaders(this.req.header, headers);
      this.req.onHeader?.();
    }
  }

  data(chunk: Buffer): void {
    // Ended locally: let the stream drain unread. (OK trailers may come before a paused stream's last data.)
    if (this.final) return;
    try {
      for (const message of this.decoder.push(chunk)) this.onMessage(message);
    } catch (err) {
      this.fail(
        err instanceof GrpcError
          ? new GrpcError(err.code, err.message, { metadata: this.req.trailer })
          : new GrpcError(Code.INTERNAL, `Response message parsing error: ${(err as Error).message}`, { metadata: this.req.trailer }),
      );
    }
  }

  trailers(headers: IncomingHttpHeaders): void {
    if (this.final !== undefined) return;
    this.final = statusFromTrailers(headers, this.httpStatus, this.req.trailer) ?? null;
    // Answered before the client half-closed (an early response): half-close now, so the stream can
    // close once the last messages are read; requests still to come are discarded.
    if (this.req.messages && !this.stream!.writableEnded) this.stream!.end();
  }

  /** Ends the call with `status` and resets the stream. */
  fail(status: GrpcError): void {
    if (this.final !== undefined) return;
    this.final = status;
    this.paused = false;
    this.stream?.close(constants.NGHTTP2_CANCEL);
  }

  /** Cancels the call unless it has ended. */
  cancel(): void {
    if (!this.finished) this.fail(new GrpcError(Code.CANCELLED, "Cancelled on client", { metadata: this.req.trailer }));
  }

  pause(): void {
    if (this.paused || this.final !== undefined) return;
    this.paused = true;
    this.stream?.pause();
  }

  resume(): void {
    if (!this.paused) return;
    this.paused = false;
    this.stream?.resume();
  }

  closed(): void {
    clearTimeout(this.timer);
    // A read of the requests still waiting (for the HTTP body) ends: nothing more will be sent.
    this.req.messages?.return?.()?.catch(ignore);
    this.req.signal.removeEventListener("abort", this.#onAbort);
    this.client.track(-1);
    let status = this.final;
    if (
      status === undefined &&
      !this.retried &&
      this.httpStatus === 0 &&
      (this.stream!.rstCode === constants.NGHTTP2_REFUSED_STREAM || neverSent(this.streamError))
    ) {
      // Refused unprocessed (e.g. by a session that was going away), or never sent because the connection failed
      // (e.g. a TLS handshake begun just before the server's certificate was reloaded): safe to send once more, as
      // grpc-js's transparent retry, on a new connection.
      this.retried = true;
      this.streamError = undefined;
      this.start();
      return;
    }
    if (status === null && this.decoder.pending) {
      status = new GrpcError(Code.INTERNAL, "the response ended inside a message", { metadata: this.req.trailer });
    } else if (status === undefined) {
      const lost = this.session?.destroyed === true;
      status = statusFromClose(this.stream!.rstCode ?? 0, this.streamError, lost, this.req.trailer);
    }
    this.finished = true;
    this.onEnd(status ?? undefined);
  }

  #endEarly(code: Code, message: string): void {
    this.final = new GrpcError(code, message, { metadata: this.req.trailer });
    this.finished = true;
    // Asynchronous like any other end, so callers see the same order of events.
    queueMicrotask(() => this.onEnd(this.final!));
  }
}

/** A stream the session cancelled while still pending: its connection never came up, so nothing of the call was sent. */
function neverSent(err: Error | undefined): boolean {
  return (err as NodeJS.ErrnoException | undefined)?.code === "ERR_HTTP2_STREAM_CANCEL";
}

function onResponse(this: CallStream, headers: IncomingHttpHeaders, flags: number): void {
  this[CALL].response(headers, flags);
}
function onData(this: CallStream, chunk: Buffer): void {
  this[CALL].data(chunk);
}
function onTrailers(this: CallStream, headers: IncomingHttpHeaders): void {
  this[CALL].trailers(headers);
}
function onError(this: CallStream, err: Error): void {
  this[CALL].streamError = err;
}
function onClose(this: CallStream): void {
  this[CALL].closed();
}
function onDeadline(call: WireCall): void {
  // A timer counts from the event loop's cached time, so it can fire a millisecond or two before the
  // wall-clock deadline; the server, holding the same deadline, would then take the cancel for a plain one.
  const early = call.req.deadline - Date.now();
  if (early > 0) {
    call.timer = setTimeout(onDeadline, early, call);
    return;
  }
  call.fail(new GrpcError(Code.DEADLINE_EXCEEDED, "Deadline exceeded", { metadata: call.req.trailer }));
}
