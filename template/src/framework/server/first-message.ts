import type { ServerHttp2Stream } from "node:http2";
import type { Readable } from "node:stream";

/** Set by noteRequestReader on a client-streaming or bidi call's HTTP/2 stream: the handler's message stream. */
const READER = Symbol("request reader");

/** An HTTP/2 stream of a gRPC call, as noteRequestReader marks it. */
export type WithRequestReader = { [READER]?: Readable };
type Stream = ServerHttp2Stream & WithRequestReader;

/**
 * Tells the guard where a client-streaming or bidi call's decoded messages go (grpc-js's call object, which
 * the handler reads), so that it can see whether the first one has arrived: once per call, when its handler
 * starts. grpc-js keeps the HTTP/2 stream on its innermost call (not in its types).
 */
export function noteRequestReader(call: Readable): void {
  const stream = (call as Readable & { call?: { stream?: Stream } }).call?.stream;
  if (stream !== undefined) stream[READER] = call;
}

/**
 * Whether a call's first request message has arrived whole. Unary and server-streaming calls (grpc-js runs
 * their handler only after the message and the half-close): the request stream has ended. Client-streaming and
 * bidi calls: a decoded message waits in the handler's stream or has been read from it. Bytes still waiting in
 * the HTTP/2 stream's own buffer are a handler yet to read, not a stalled client (and flow control holds the
 * client meanwhile): left alone as before.
 */
export function firstMessageIn(stream: Stream): boolean {
  if (stream.readableEnded || stream.readableLength > 0) return true;
  const reader = stream[READER];
  return reader !== undefined && (reader.readableDidRead || reader.readableLength > 0);
}
