import { Code, GrpcError } from "../call/status.js";

/** gRPC's length-prefixed message: a flag byte (1 = compressed), a big-endian uint32 length, the bytes. */
const PREFIX = 5;

/** Default limit of a received message, as grpc-js's client (4 MiB). */
export const DEFAULT_MAX_RECEIVE_LENGTH = 4 * 1024 * 1024;

/** One uncompressed message as a gRPC frame, in a single buffer (so it goes out as one DATA frame). */
export function encodeFrame(message: Uint8Array): Buffer {
  const frame = Buffer.allocUnsafe(PREFIX + message.length);
  frame[0] = 0;
  frame.writeUInt32BE(message.length, 1);
  frame.set(message, PREFIX);
  return frame;
}

/**
 * Splits a response body into messages whatever the chunking: several frames in one chunk, or one
 * frame over many chunks (kept until complete, then joined once). Messages are views of the chunks.
 */
export class FrameDecoder {
  /** Bytes of an incomplete frame, and how many the frame (or its prefix) needs before parsing again. */
  #parts: Buffer[] = [];
  #have = 0;
  #need = 0;

  constructor(readonly maxLength = DEFAULT_MAX_RECEIVE_LENGTH) {}

  /** The messages completed by `chunk`, in order. Throws a GrpcError for a frame it cannot accept. */
  push(chunk: Buffer): Buffer[] {
    const messages: Buffer[] = [];
    let buf = chunk;
    if (this.#have > 0) {
      this.#parts.push(chunk);
      this.#have += chunk.length;
      if (this.#have < this.#need) return messages;
      buf = Buffer.concat(this.#parts, this.#have);
      this.#parts = [];
      this.#have = 0;
    }
    let offset = 0;
    while (buf.length - offset >= PREFIX) {
      const length = this.#check(buf, offset);
      const end = offset + PREFIX + length;
      if (end > buf.length) break;
      messages.push(buf.subarray(offset + PREFIX, end));
      offset = end;
    }
    if (offset < buf.length) {
      const rest = offset === 0 ? buf : buf.subarray(offset);
      this.#parts.push(rest);
      this.#have = rest.length;
      this.#need = rest.length >= PREFIX ? PREFIX + rest.readUInt32BE(1) : PREFIX;
    }
    return messages;
  }

  /** Whether bytes of an unfinished frame are left (a body that ends there is truncated). */
  get pending(): boolean {
    return this.#have > 0;
  }

  #check(buf: Buffer, offset: number): number {
    const flag = buf[offset]!;
    const length = buf.readUInt32BE(offset + 1);
    // The gateway never offers compression (no grpc-accept-encoding), so a compressed message is a protocol error.
    if (flag !== 0) throw new GrpcError(Code.INTERNAL, `received a message with flags ${flag}, but no compression was negotiated`);
    if (length > this.maxLength) {
      throw new GrpcError(Code.RESOURCE_EXHAUSTED, `Received message larger than max (${length} vs. ${this.maxLength})`);
    }
    return length;
  }
}
