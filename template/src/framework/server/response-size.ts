import type { DescMessage, Message } from "@bufbuild/protobuf";
import { Code, GrpcError } from "../call/status.js";
import { binaryCodec } from "../codec/codec.js";

/**
 * The bytes the handler step encoded for the size check, on the result it returned, with the message they
 * are the encoding of: an interceptor that returns another message (even in a copy of this result) gets its
 * own encoding. (One that changes the message in place could not be seen, which is why bytes are kept only
 * when no custom interceptor is in the chain.) A property of the result rather than a WeakMap keyed by the
 * message: a WeakMap entry per call made each young-generation collection do ephemeron work (about 1 µs of
 * CPU per call, measured alone).
 */
const ENCODED = Symbol("encoded response");
type Encoded = { readonly message: Message; readonly bytes: Buffer };
type EncodedResult = { readonly message: Message; readonly [ENCODED]?: Encoded };

/**
 * Over gRPC, a response larger than GRPC_MAX_SEND_MSG_SIZE fails RESOURCE_EXHAUSTED. grpc-js finds that
 * out only as it writes, after the chain has counted and logged the call OK; so the size is checked where
 * the chain still sees the outcome. A single response is encoded in the handler step (then the bytes go
 * out as they are, see `wireResponse`); each message of a stream is encoded by the adapter as it writes
 * it, which fails the stream before its end hooks run.
 */
export class ResponseLimit {
  readonly maxBytes: number;
  /** Whether the bytes encoded for the check may be sent: no interceptor after the handler step can change the message. */
  readonly #reuse: boolean;

  constructor(maxBytes: number, reuse: boolean) {
    this.maxBytes = maxBytes;
    this.#reuse = reuse;
  }

  /** The message's wire bytes; throws RESOURCE_EXHAUSTED when they are more than the limit. */
  encode(type: DescMessage, message: Message): Buffer {
    const bytes = binaryCodec(type).encode(message);
    if (bytes.byteLength > this.maxBytes) throw tooLarge(bytes.byteLength, this.maxBytes);
    return bytes;
  }

  /** Checks a single response (unary, client-streaming): its result, carrying the bytes for the adapter when they may be sent. */
  check(type: DescMessage, message: Message): EncodedResult {
    const bytes = this.encode(type, message);
    return this.#reuse ? { message, [ENCODED]: { message, bytes } } : { message };
  }
}

function tooLarge(size: number, max: number): GrpcError {
  return new GrpcError(Code.RESOURCE_EXHAUSTED, `response message larger than max (${size} vs. ${max} bytes)`);
}

/** What the adapter hands grpc-js for a single response: the bytes already encoded, else the message. */
export function wireResponse(result: EncodedResult): Message | Buffer {
  const encoded = result[ENCODED];
  return encoded !== undefined && encoded.message === result.message ? encoded.bytes : result.message;
}
