import { constants as http2Constants, type ServerHttp2Session, type ServerHttp2Stream } from "node:http2";
import { Code } from "../call/status.js";

/** How long the statuses have to reach the clients before the connection is reset anyway. */
const FLUSH_MS = 250;

const MESSAGE = "the server is shutting down: retry on another replica";

// retry-after (seconds), as SHUTTING_DOWN carries: the gateway's HTTP clients of these calls get it as Retry-After on their 503.
const TRAILERS = { "grpc-status": String(Code.UNAVAILABLE), "grpc-message": encodeURIComponent(MESSAGE), "retry-after": "1" };
const TRAILERS_ONLY = { ":status": 200, "content-type": "application/grpc+proto", ...TRAILERS };

/**
 * Ends every call still open on a connection with UNAVAILABLE, as gRPC statuses (trailers-only when nothing was
 * answered yet, trailers after the messages sent otherwise), then closes the connection, and resets it if its
 * streams have not closed within FLUSH_MS. A client retries UNAVAILABLE elsewhere; a reset (NGHTTP2_CANCEL)
 * reaches it as CANCELLED, which it does not retry. The shutdown budget ran out: whatever the handlers still do
 * is discarded.
 */
export function endWithUnavailable(session: ServerHttp2Session, reset: (session: ServerHttp2Session) => void): void {
  for (const stream of openStreams(session)) {
    if (stream.closed || stream.destroyed) continue;
    // A handler still running may write into the ended stream: its error is expected, and must not be unhandled.
    stream.on("error", () => {});
    try {
      if (!stream.headersSent) stream.respond(TRAILERS_ONLY, { endStream: true });
      else if (!stream.writableEnded) {
        // grpc-js answers with waitForTrailers: the trailers go once the messages already written are out.
        stream.once("wantTrailers", () => stream.sendTrailers(TRAILERS));
        stream.end();
      }
    } catch {
      stream.close(http2Constants.NGHTTP2_CANCEL);
    }
  }
  try {
    session.close();
  } catch {
    // Already closing.
  }
  const timer = setTimeout(() => reset(session), FLUSH_MS);
  timer.unref();
  session.once("close", () => clearTimeout(timer));
}

/** Node keeps a session's open streams in its internal state only; an empty list if a Node release moves them. */
function openStreams(session: ServerHttp2Session): ServerHttp2Stream[] {
  const state = Object.getOwnPropertySymbols(session).find((s) => s.description === "state");
  const streams =
    state === undefined ? undefined : (session as unknown as Record<symbol, { streams?: Map<number, ServerHttp2Stream> }>)[state]?.streams;
  // Node's own SafeMap: a Map in all but its prototype chain.
  return typeof streams?.values === "function" ? [...streams.values()] : [];
}
