import { type DescMessage, fromBinary, type Message, type MessageShape, toBinary } from "@bufbuild/protobuf";
import { compilable } from "./compilable.js";
import { blank, type MessageDecoder, messageDecoder, type Reader } from "./decoder.js";
import { type Lengths, type MessageEncoder, messageEncoder } from "./encoder.js";

/**
 * The protobuf binary codec of one message type: what the framework's gRPC, gRPC-Web, Connect and gateway
 * paths (de)serialise with. For proto3 types it is compiled once per type (codec/encoder.ts,
 * codec/decoder.ts) and gives exactly protobuf-es's bytes and messages, only with less work per message;
 * anything the compiled code does not take on — other editions, malformed input, values protobuf-es would
 * coerce or reject — goes to protobuf-es's `toBinary`/`fromBinary`, so callers see its results and errors.
 */
export interface BinaryCodec<T extends Message = Message> {
  /** The message's wire bytes, as `toBinary` writes them, in a Buffer of their own length. */
  encode(message: T): Buffer;
  /** The message in `bytes`, as `fromBinary` reads it; throws its errors. */
  decode(bytes: Uint8Array): T;
}

const codecs = new WeakMap<DescMessage, BinaryCodec>();

/** The codec of a message type; made on first use and kept with the descriptor. */
export function binaryCodec<Desc extends DescMessage>(desc: Desc): BinaryCodec<MessageShape<Desc>> {
  let codec = codecs.get(desc);
  if (codec === undefined) {
    codec = compilable(desc) ? compiledCodec(desc) : protobufEsCodec(desc);
    codecs.set(desc, codec);
  }
  return codec as BinaryCodec<MessageShape<Desc>>;
}

function protobufEsCodec(desc: DescMessage): BinaryCodec {
  return {
    encode: (message) => Buffer.from(toBinary(desc, message)),
    decode: (bytes) => fromBinary(desc, bytes),
  };
}

function compiledCodec(desc: DescMessage): BinaryCodec {
  const slow = protobufEsCodec(desc);
  const encoder = messageEncoder(desc);
  const decoder = messageDecoder(desc);
  const make = blank(desc);
  return {
    encode(message) {
      try {
        return encode(encoder, message);
      } catch {
        // Also a bug of the compiled code, should there be one: protobuf-es's answer is the right one.
        return slow.encode(message);
      }
    },
    decode(bytes) {
      try {
        return decode(make, decoder, bytes);
      } catch {
        return slow.decode(bytes);
      }
    },
  };
}

/** The compiled encoder alone: throws where the codec falls back to protobuf-es. (Exported for the tests.) */
export function compiledEncode(desc: DescMessage, message: Message): Buffer {
  return encode(messageEncoder(desc), message);
}

/** The compiled decoder alone: throws where the codec falls back to protobuf-es. (Exported for the tests.) */
export function compiledDecode(desc: DescMessage, bytes: Uint8Array): Message {
  return decode(blank(desc), messageDecoder(desc), bytes);
}

function encode(encoder: MessageEncoder, message: Message): Buffer {
  const lengths: Lengths = { list: [], next: 0 };
  const size = encoder.size(message, lengths);
  const buf = Buffer.allocUnsafe(size);
  // Every byte of the pooled buffer is written, or none of it leaves: it may hold other data.
  if (encoder.write(message, buf, 0, lengths) !== size) throw new Error("compiled encoder: size mismatch");
  return buf;
}

function decode(make: () => Message, decoder: MessageDecoder, bytes: Uint8Array): Message {
  const message = make();
  const reader: Reader = { buf: bytes, len: bytes.byteLength, pos: 0, depth: 0 };
  decoder.read(message, reader, reader.len);
  return message;
}
