import type { IncomingHttpHeaders, OutgoingHttpHeaders } from "node:http";
import { type Http2Server, constants as http2Constants, type ServerHttp2Session, type ServerHttp2Stream } from "node:http2";
import { Code } from "../call/status.js";
import { rootLogger } from "../logging/logger.js";
import { MESSAGES_HELD, type PartialMessageBudget } from "../overload/partial-messages.js";
import { type OnConnectionRefused, reportRefusedConnections } from "./connection-refusals.js";
import { firstMessageIn, type WithRequestReader } from "./first-message.js";
import { GATEWAY_PATH_KEY, isGatewayHop } from "./grpc-adapter.js";
import { trackPartialMessages } from "./partial-messages.js";
import { TimeoutBuckets } from "./timeout-buckets.js";
import { closeNoError } from "./unread-body.js";

/**
 * Streams on the gateway's own connection: every HTTP call it serves is a gRPC call on that one connection
 * (1,000 SSE clients are 1,000 streams), so it gets this limit in place of GRPC_MAX_CONCURRENT_STREAMS.
 */
export const GATEWAY_MAX_CONCURRENT_STREAMS = 10_000;

export interface ConnectionLimits {
  /** GRPC_MAX_CONNECTIONS: 0 for no cap. */
  maxConnections: number;
  /** GRPC_FIRST_MESSAGE_TIMEOUT_SECONDS in milliseconds: 0 for none. */
  firstMessageTimeoutMs: number;
  /** Told of each connection refused at the cap (the metrics count it). */
  onRefused?: OnConnectionRefused | undefined;
  /** MAX_PARTIAL_MESSAGE_BYTES: the process's budget of bytes in unfinished request messages; undefined or disabled for none. */
  partialMessages?: PartialMessageBudget | undefined;
}

/** Set on a session once it is known to be the gateway's (its calls carry the process's gateway token). */
const GATEWAY = Symbol("gateway connection");
type Session = ServerHttp2Session & { [GATEWAY]?: true };

/**
 * Guards one gRPC server's HTTP/2 servers against clients that hold resources without using them:
 * a cap on open connections (net.Server's own `maxConnections`: a connection beyond it is closed before
 * any HTTP/2 state is made; connection-refusals.ts counts and logs it), a time limit for a call's first
 * request message, and the count of unfinished request messages (partial-messages.ts). The per-connection
 * stream limit is grpc-js's `grpc.max_concurrent_streams`, which this lifts on the gateway's connection.
 *
 * Calls waiting for their first message are found by one coarse sweep per server rather than a timer per
 * call (TimeoutBuckets: an array slot a call, no allocation), which looks at each stream once, between one
 * and one and a half timeouts after it opened. A call is ended then unless its first request message has arrived
 * whole (firstMessageIn), it has closed, or the server has answered its headers (a server-streaming or bidi call
 * the server is already talking on is not idle). A message begun and never finished counts as none: a client
 * that sends 5 bytes of a message's prefix, or the prefix and half the message, and then stalls would otherwise
 * hold the stream, and the part grpc-js has buffered (up to GRPC_MAX_RECV_MSG_SIZE a call), for ever.
 */
export class ConnectionGuard {
  readonly #limits: ConnectionLimits;
  /** Calls waiting for their first message; undefined when the timeout is off. */
  readonly #waiting: TimeoutBuckets<ServerHttp2Stream> | undefined;
  /** Marks a connection's calls as counted against MAX_PARTIAL_MESSAGE_BYTES; undefined when off. */
  readonly #countPartial: ((session: ServerHttp2Session, budget: PartialMessageBudget | undefined) => void) | undefined;

  constructor(limits: ConnectionLimits) {
    this.#limits = limits;
    if (limits.partialMessages?.enabled === true) this.#countPartial = trackPartialMessages(refuseExhausted);
    const timeoutMs = limits.firstMessageTimeoutMs;
    if (timeoutMs > 0) {
      this.#waiting = new TimeoutBuckets({
        timeoutMs,
        slices: 2,
        // Dropped once its message is in, not only once closed: under load most calls are in flight with their
        // message in, and while they counted as waiting, compaction kept about as many closed streams (and their
        // calls) again, past young-generation collections: +30 k instructions a call at h2load -c16 -m8.
        settled: (stream) => !awaitsFirstMessage(stream),
        expire: endIfIdle,
        onExpired: (calls) =>
          rootLogger().warn(
            { calls, timeout_s: timeoutMs / 1000 },
            "gRPC calls ended with DEADLINE_EXCEEDED: request message not received within GRPC_FIRST_MESSAGE_TIMEOUT_SECONDS",
          ),
      });
    }
  }

  /** Applies the limits to one of grpc-js's HTTP/2 servers (TCP, TLS or the gateway's Unix socket); its streams come to `admit`. */
  watch(http2Server: Http2Server): void {
    const { maxConnections, onRefused } = this.#limits;
    if (maxConnections > 0) {
      http2Server.maxConnections = maxConnections;
      reportRefusedConnections(http2Server, { port: "grpc", setting: "GRPC_MAX_CONNECTIONS", max: maxConnections, onRefused });
    }
    http2Server.on("session", (session: Session) => {
      // A Unix socket is the gateway's private hop (0600 in a 0700 directory): no remote address.
      if (session.socket?.remoteAddress === undefined) this.#markGateway(session);
      else this.#countPartial?.(session, this.#limits.partialMessages);
    });
  }

  /**
   * Takes each new stream of a watched server before grpc-js does, from the server's one 'stream' listener (a
   * second listener would cost an array copy per stream). A stream that is not gRPC's is answered by grpc-js at
   * once (415), so settled and dropped at the next compaction; with SINGLE_PORT, the HTTP port's own streams do
   * not come here.
   */
  admit(stream: ServerHttp2Stream, headers: IncomingHttpHeaders): void {
    const session = stream.session as Session | undefined;
    if (session === undefined || session[GATEWAY] === true) return;
    if (isGatewayHop(headers[GATEWAY_PATH_KEY])) this.#markGateway(session);
    // A request with END_STREAM on its headers has nothing more to send.
    else if (!stream.endAfterHeaders) this.#waiting?.add(stream);
  }

  /** Calls the first-message check holds (waiting, or settled and not yet dropped). */
  get held(): number {
    return this.#waiting?.size ?? 0;
  }

  /** Stops the sweep (the server is stopping); the streams still held are the shutdown's to end. */
  close(): void {
    this.#waiting?.close();
  }

  /** The gateway's connection: its calls were counted and timed on the HTTP side. */
  #markGateway(session: Session): void {
    session[GATEWAY] = true;
    this.#countPartial?.(session, undefined);
    try {
      session.settings({ maxConcurrentStreams: GATEWAY_MAX_CONCURRENT_STREAMS });
    } catch {
      // The session is already closing.
    }
  }
}

const TIMED_OUT_HEADERS = {
  ":status": 200,
  "content-type": "application/grpc+proto",
  "grpc-status": String(Code.DEADLINE_EXCEEDED),
  "grpc-message": "request message not received within GRPC_FIRST_MESSAGE_TIMEOUT_SECONDS",
};

/**
 * Ends a call whose first request message has not arrived: a trailers-only DEADLINE_EXCEEDED (the server's own
 * time limit ran out, as for a call over GRPC_SERVER_DEFAULT_TIMEOUT_IN_SECONDS), then RST_STREAM NO_ERROR, which
 * tells the client to stop sending (RFC 9113 §8.1) and frees the stream. grpc-js sees the stream close
 * and ends its call, dropping what it buffered of a partial message (grpc-rejections counts it with this status).
 */
function endIfIdle(stream: ServerHttp2Stream & WithRequestReader): boolean {
  if (!awaitsFirstMessage(stream)) return false;
  answerAndReset(stream, TIMED_OUT_HEADERS);
  return true;
}

/** Open, not answered, and its first request message not in whole: what the check ends when its time is up. */
function awaitsFirstMessage(stream: ServerHttp2Stream & WithRequestReader): boolean {
  return !(stream.closed || stream.destroyed || stream.headersSent || firstMessageIn(stream));
}

const EXHAUSTED_HEADERS = {
  ":status": 200,
  "content-type": "application/grpc+proto",
  "grpc-status": String(Code.RESOURCE_EXHAUSTED),
  "grpc-message": MESSAGES_HELD,
};

/**
 * Ends a call whose unfinished request message would pass MAX_PARTIAL_MESSAGE_BYTES: a trailers-only
 * RESOURCE_EXHAUSTED and RST_STREAM NO_ERROR, as endIfIdle; once the server has sent its headers, RST_STREAM
 * ENHANCE_YOUR_CALM, which gRPC clients read as RESOURCE_EXHAUSTED. grpc-js drops what it buffered as the stream closes.
 */
function refuseExhausted(stream: ServerHttp2Stream): void {
  if (!stream.headersSent) return answerAndReset(stream, EXHAUSTED_HEADERS);
  try {
    stream.close(http2Constants.NGHTTP2_ENHANCE_YOUR_CALM);
  } catch {
    stream.destroy();
  }
}

/**
 * A trailers-only answer, then RST_STREAM NO_ERROR, which stops the rest of the request. A turn later: reset at
 * once, Node 22 (inside a data callback) sent the RST_STREAM without the HEADERS before it, so the client saw no
 * status (grpc-js reports INTERNAL); Node 24 sends both.
 */
function answerAndReset(stream: ServerHttp2Stream, headers: OutgoingHttpHeaders): void {
  try {
    stream.respond(headers, { endStream: true });
    setImmediate(closeNoError, stream);
  } catch {
    stream.destroy();
  }
}
