import type { IncomingMessage, ServerResponse } from "node:http";
import { constants as http2Constants, type Http2ServerRequest, type Http2ServerResponse, type Http2Stream } from "node:http2";

/** What is still read of an HTTP/1.1 body nobody needs any more, before the connection is closed instead. */
const DISCARD_BYTES = 256 * 1024;
const DISCARD_MS = 1000;

/**
 * The call ended before its request body did (an early answer, an error) and the rest is not wanted.
 *
 * Over HTTP/1.1 the rest is read and thrown away, so a client that was about to finish can keep its
 * connection, but only up to DISCARD_BYTES or DISCARD_MS; past that the connection closes once the response is
 * out. Reading on without a bound would let a client that never stops sending hold the server busy for nothing
 * (as Go's net/http, which reads at most 256 KiB of an unread body before closing).
 *
 * Over HTTP/2 the request's own stream is reset with NO_ERROR once the response is out: the client stops
 * sending and keeps the response (RFC 9113 §8.1), the connection and its other calls go on. Its socket is the
 * session's: closing it, as over HTTP/1.1, would end every call on the connection.
 */
export function discardRest(body: IncomingMessage | Http2ServerRequest, res: ServerResponse | Http2ServerResponse): void {
  if ("stream" in body) return resetWhenAnswered(body);
  const socket = body.socket;
  let left = DISCARD_BYTES;
  const stop = () => {
    clearTimeout(timer);
    body.off("data", onData);
  };
  const close = () => {
    stop();
    if (res.writableFinished) socket.destroySoon();
    else res.once("finish", () => socket.destroySoon());
  };
  const onData = (chunk: Buffer) => {
    left -= chunk.length;
    if (left < 0) close();
  };
  const timer = setTimeout(close, DISCARD_MS);
  body.on("data", onData);
  body.once("end", stop);
  body.once("close", stop);
}

/**
 * Over HTTP/2, once the response has ended, resets the request's stream with NO_ERROR if the request has not
 * ended: the client stops sending and keeps the response (RFC 9113 §8.1). On the stream's own 'finish' (the
 * response's comes only as the stream closes, so a handler that waits for it waits for the client), a turn after
 * it: reset at once, Node 22 can send the RST_STREAM ahead of the last frames.
 */
export function resetWhenAnswered(body: Http2ServerRequest): void {
  const { stream } = body;
  const reset = () => body.readableEnded || setImmediate(closeNoError, stream);
  if (stream.writableFinished) reset();
  else stream.once("finish", reset);
}

/** RST_STREAM NO_ERROR: the response is out, the rest of the request is not wanted (RFC 9113 §8.1). */
export function closeNoError(stream: Http2Stream): void {
  if (!stream.destroyed) stream.close(http2Constants.NGHTTP2_NO_ERROR);
}
