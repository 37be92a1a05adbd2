import type { MethodInfo } from "../call/types.js";

/**
 * How a server-streaming response is framed over HTTP for one media type. A marshaler only turns
 * strings into strings; the gateway does the I/O, flushes after every frame and never compresses.
 *
 * Register one from a service's `preStart` hook to replace a built-in one (or add a media type):
 *
 *   async preStart(app) { app.gateway.registerMarshaler("text/event-stream", myMarshaler); }
 */
export interface StreamMarshaler {
  /** Response headers, `content-type` included. */
  readonly headers: Readonly<Record<string, string>>;
  /**
   * One response message. `json` is its canonical proto3 JSON (only the `response_body` field when
   * the rule has one); `index` counts messages from 0.
   */
  message(json: string, index: number, method: MethodInfo): string;
  /**
   * The error that ended a stream whose headers were already sent. `status` is the error's
   * `{"code","message","details"}` JSON. (An error before anything was sent is a plain JSON error
   * response with the HTTP status of its code instead, whatever the marshaler.)
   */
  error(status: string, method: MethodInfo): string;
  /**
   * Written every SSE_HEARTBEAT_SECONDS while the stream is open (the first one also sends the
   * headers, if no message has yet). Omit for no heartbeat.
   */
  readonly heartbeat?: string;
  /**
   * Written after the last message of a stream that ended OK, before the response ends. Omit for none
   * (NDJSON needs none: the end of the body is the end of the stream).
   */
  readonly end?: string;
}

/** Newline-delimited JSON, grpc-gateway's stream format: `{"result":…}\n` per message, `{"error":…}\n` last. */
export const ndjsonMarshaler: StreamMarshaler = {
  headers: { "content-type": "application/x-ndjson" },
  message: (json) => `{"result":${json}}\n`,
  error: (status) => `{"error":${status}}\n`,
};

/**
 * Server-sent events: `data: {"result":…}` frames, then `event: end` (data `{}`) or `event: error` last,
 * `: ping` comments between. The end event lets an EventSource close: when the response just ends, the
 * browser reconnects and the stream is played again.
 */
export const sseMarshaler: StreamMarshaler = {
  headers: { "content-type": "text/event-stream", "cache-control": "no-cache", "x-accel-buffering": "no" },
  message: (json) => `data: {"result":${json}}\n\n`,
  error: (status) => `event: error\ndata: {"error":${status}}\n\n`,
  heartbeat: ": ping\n\n",
  end: "event: end\ndata: {}\n\n",
};

export const NDJSON = "application/x-ndjson";
export const EVENT_STREAM = "text/event-stream";

/**
 * The stream marshalers by media type, chosen by the request's `Accept`. NDJSON is the default
 * and answers any request that lists none of the registered types.
 */
export class Marshalers {
  readonly #byType = new Map<string, StreamMarshaler>();
  #frozen = false;

  constructor(options: { sse: boolean }) {
    this.#byType.set(NDJSON, ndjsonMarshaler);
    if (options.sse) this.#byType.set(EVENT_STREAM, sseMarshaler);
  }

  /**
   * Serves streams as `mediaType` when a request's `Accept` lists it, replacing any marshaler
   * (built-in or not) registered for it before. Only before the servers start (e.g. from `preStart`);
   * a registration wins even over DISABLE_SSE_MARSHALER.
   */
  registerMarshaler(mediaType: string, marshaler: StreamMarshaler): void {
    if (this.#frozen) throw new Error("stream marshalers can only be registered before the servers start (e.g. from preStart)");
    const type = mediaType.trim().toLowerCase();
    if (!/^[a-z0-9!#$&^_.+-]+\/[a-z0-9!#$&^_.+-]+$/.test(type)) throw new Error(`"${mediaType}" is not a media type`);
    this.#byType.set(type, marshaler);
  }

  /** Stops registration; the gateway calls it once its routes are built. */
  freeze(): void {
    this.#frozen = true;
  }

  /** The media types served, the default first. */
  mediaTypes(): string[] {
    return [...this.#byType.keys()];
  }

  /** The marshaler for a request: the first listed media type it has (q=0 excluded), else NDJSON. */
  select(accept: string | undefined): StreamMarshaler {
    const fallback = this.#byType.get(NDJSON)!;
    if (accept === undefined || this.#byType.size === 1) return fallback;
    for (const item of accept.split(",")) {
      const semi = item.indexOf(";");
      const type = (semi === -1 ? item : item.slice(0, semi)).trim().toLowerCase();
      const marshaler = this.#byType.get(type);
      if (marshaler && (semi === -1 || !/;\s*q\s*=\s*0(?:\.0*)?\s*(?:;|$)/i.test(item))) return marshaler;
    }
    return fallback;
  }
}
