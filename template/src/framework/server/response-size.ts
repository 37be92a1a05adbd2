import { type DescMessage, type Message, toBinary } from "@bufbuild/protobuf";
import { Code, GrpcError } from "../call/status.js";

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
    const bytes = toBinary(type, message);
    if (bytes.byteLength > this.maxBytes) throw tooLarge(bytes.byteLength, this.maxBytes);
    // A copy, as grpc-js's own encoding made: a Buffer viewing the same memory costs more to make (measured).
    return Buffer.from(bytes);
  }

  /** Checks a single response (unary, client-streaming), keeping its bytes for the adapter when they may be sent. */
  check(type: DescMessage, message: Message): void {
    const bytes = this.encode(type, message);
    if (this.#reuse) encoded.set(message, bytes);
  }
}

function tooLarge(size: number, max: number): GrpcError {
  return new GrpcError(Code.RESOURCE_EXHAUSTED, `response message larger than max (${size} vs. ${max} bytes)`);
}

/**
 * Single responses the handler step encoded for the size check. Keyed by the message object: an
 * interceptor that replaces the response gets its own encoding. (One that changes the message in place
 * could not be seen, which is why bytes are kept only when no custom interceptor is in the chain.)
 */
const encoded = new WeakMap<Message, Buffer>();

/** What the adapter hands grpc-js for a single response: the bytes already encoded, else the message. */
export function wireResponse(message: Message): Message | Buffer {
  return encoded.get(message) ?? message;
}
