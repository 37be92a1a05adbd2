import { type Http2ServerRequest, type Http2ServerResponse, constants as http2Constants, type ServerHttp2Session } from "node:http2";
import { Code } from "../call/status.js";
import { statusJson } from "../errors/wire.js";
import { TimeoutBuckets } from "./timeout-buckets.js";

/** The limits, as HTTP/1.1's: HTTP_HEADERS_TIMEOUT_SECONDS and HTTP_REQUEST_TIMEOUT_SECONDS in milliseconds. */
export interface Http2TimeoutLimits {
  headersMs: number;
  requestMs: number;
}

/** Set on a stream whose request body streams for a whole call (liftHttp2RequestTimeout). */
const LIFTED = Symbol("request timeout lifted");
/** The newest stream of a session that a PING answer showed is not a header block in progress. */
const CLEARED = Symbol("newest stream cleared");
/** A session whose newest stream has not changed since a sweep: that stream, since when, and the PING sent about it. */
const SUSPECT = Symbol("header block in progress");

type Stream = Http2ServerRequest["stream"] & { [LIFTED]?: true };
type Session = ServerHttp2Session & { [CLEARED]?: number; [SUSPECT]?: { id: number; since: number; pinged?: number } };

/** The least time a client is given to answer the PING about a header block (see Http2Timeouts). */
const PING_ANSWER_MIN_MS = 1000;

const TIMED_OUT_BODY = statusJson(Code.DEADLINE_EXCEEDED, "request not received in time", []);

/**
 * The time limits HTTP/1.1 has (Node's headersTimeout and requestTimeout) for HTTP/2 on the HTTP port, which
 * Node's http2 server does not apply: without them a stream whose request body never ends, or a connection
 * stopped in the middle of a request's headers, is held for ever (the connection's idle timeout waits for its
 * open streams, and a header block in progress keeps anything else off the connection).
 *
 * - A request whose body has not ended within the request timeout (from its headers) is answered 408 with
 *   DEADLINE_EXCEEDED, as HTTP/1.1's, and its stream closed (RST_STREAM NO_ERROR: the client stops sending).
 *   Its handler never takes the part received for the whole body. Requests with END_STREAM on their headers
 *   (GET and friends) cost nothing; the others take an array slot (TimeoutBuckets), looked at between one and
 *   1.1 timeouts after their headers. Client-streaming and bidi routes lift it (their calls' deadline and
 *   HTTP_STREAM_IDLE_TIMEOUT_SECONDS end them).
 * - Headers: HTTP/2 has no header of a stream before its whole header block is in, and a header block may not
 *   be interleaved with any other frame. nghttp2 reports the last stream whose header block has begun
 *   (`state.lastProcStreamID`); a session on which that has not changed for the header timeout is sent one
 *   PING, and is closed if the answer has not come within half the timeout (1 s at least: 15 to 16 s in all by
 *   default). A client in the middle of a header block cannot answer; any other client's answer clears that
 *   stream, so a quiet connection is asked once per newest stream, not again until a new stream begins. The
 *   sweep runs at a tenth of the header timeout (1 s at most, as Node's connectionsCheckingInterval for
 *   HTTP/1.1) while sessions are open. Nothing is done per request: reading a stream's session and id there
 *   (getters over fields of Node's stream objects, which come in many shapes: megamorphic loads) cost about
 *   5 k instructions of a Connect call's 310 k over h2c.
 * - A request whose client resets its stream before its body's end (RST_STREAM, no END_STREAM) is dropped
 *   (dropBody): its handler never takes the part received for the whole body, as over HTTP/1.1.
 */
export class Http2Timeouts {
  readonly #limits: Http2TimeoutLimits;
  readonly #requests: TimeoutBuckets<Http2ServerResponse>;
  readonly #sessions = new Set<Session>();
  readonly #sweepMs: number;
  #sweeper: NodeJS.Timeout | undefined;
  #sweeps = 0;

  constructor(limits: Http2TimeoutLimits) {
    this.#limits = limits;
    this.#requests = new TimeoutBuckets({
      timeoutMs: Math.max(limits.requestMs, limits.headersMs),
      slices: 10,
      // Dropped once its body is in or its route lifted the limit, not only once closed (as in grpc-connections.ts:
      // requests in flight counted as waiting keep as many closed ones).
      settled: (res) => res.req.complete || (res.stream as Stream)[LIFTED] === true,
      expire: expireRequest,
    });
    this.#sweepMs = Math.min(1000, Math.max(10, limits.headersMs / 10));
  }

  /**
   * A request reaching the handler: unless its headers ended it, an array slot and a listener (a shared
   * function) for a reset before its body's end.
   */
  arrived(req: Http2ServerRequest, res: Http2ServerResponse): void {
    if (!req.stream.endAfterHeaders) {
      this.#requests.add(res);
      req.on("aborted", dropBody);
    }
  }

  /** Requests the request timeout holds (waiting, or settled and not yet dropped). */
  get held(): number {
    return this.#requests.size;
  }

  /** Checks a session for a header block that never ends, while it is open. */
  watch(session: ServerHttp2Session): void {
    this.#sessions.add(session);
    session.once("close", () => this.#sessions.delete(session));
    this.#sweeper ??= setInterval(() => this.#sweep(), this.#sweepMs).unref();
  }

  #sweep(): void {
    const sweeps = ++this.#sweeps;
    const timeoutSweeps = Math.ceil(this.#limits.headersMs / this.#sweepMs);
    // The PING's answer may take a round trip on a slow link or a busy loop: half the timeout, 1 s at least.
    const answerSweeps = Math.ceil(Math.max(PING_ANSWER_MIN_MS, this.#limits.headersMs / 2) / this.#sweepMs);
    for (const session of this.#sessions) {
      if (session.destroyed) continue;
      const begun = session.state.lastProcStreamID ?? 0;
      if (begun <= (session[CLEARED] ?? 0)) {
        session[SUSPECT] = undefined;
        continue;
      }
      const suspect = session[SUSPECT];
      if (suspect === undefined || suspect.id !== begun) session[SUSPECT] = { id: begun, since: sweeps };
      else if (suspect.pinged !== undefined) {
        if (sweeps - suspect.pinged >= answerSweeps) session.destroy();
      } else if (sweeps - suspect.since >= timeoutSweeps) {
        suspect.pinged = sweeps;
        ping(session, begun);
      }
    }
    if (this.#sessions.size === 0) {
      clearInterval(this.#sweeper);
      this.#sweeper = undefined;
    }
  }
}

/** Asks the client for a PING answer: one that comes means stream `id` is not a header block in progress. */
function ping(session: Session, id: number): void {
  try {
    session.ping((err) => {
      if (err === null) session[CLEARED] = id;
      session[SUSPECT] = undefined;
    });
  } catch {
    // Node's limit of unanswered PINGs: the next sweeps close the session.
  }
}

/**
 * A request whose client reset its stream before its body's end. Node's compatibility layer then ends the
 * request's body as if complete when the stream closes, and fastify would parse the part received and run the
 * handler with it (HTTP/1.1 reports such a body as an error instead). Destroyed first (with no error: no listener
 * may be there to take one), the request never ends, so nothing runs; the client is gone.
 */
function dropBody(this: Http2ServerRequest): void {
  this.destroy();
}

/**
 * Exempts a request whose body streams for a whole call (client-streaming and bidi routes) from the request
 * timeout: its call's deadline, HTTP_STREAM_IDLE_TIMEOUT_SECONDS and shutdown end it.
 */
export function liftHttp2RequestTimeout(req: Http2ServerRequest): void {
  (req.stream as Stream)[LIFTED] = true;
}

/**
 * A request past its time: unless its body has ended (END_STREAM received: the server is slow, not the client)
 * or it is exempt, 408 if nothing was answered yet, then the stream is closed. The request object is destroyed
 * first (with no error: no listener may be there to take one), so that the stream's close, which Node's
 * compatibility layer reports as the body's end, does not hand a handler the part received as a whole body.
 */
function expireRequest(res: Http2ServerResponse): boolean {
  const stream = res.stream as Stream;
  if (stream[LIFTED] === true || stream.state.remoteClose === 1) return false;
  if (!res.headersSent) {
    res.writeHead(408, { "content-type": "application/json", "content-length": Buffer.byteLength(TIMED_OUT_BODY) }).end(TIMED_OUT_BODY);
  }
  res.req.destroy();
  stream.close(http2Constants.NGHTTP2_NO_ERROR);
  return true;
}
