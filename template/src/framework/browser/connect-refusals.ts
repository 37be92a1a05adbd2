import { Code as ConnectCode, ConnectError } from "@connectrpc/connect";
import { compressionBrotli, compressionGzip } from "@connectrpc/connect-node";
import type { UniversalServerResponse } from "@connectrpc/connect/protocol";
import {
  codeToHttpStatus,
  endStreamFlag,
  endStreamFromJson,
  errorFromJsonBytes,
  errorToJsonBytes,
} from "@connectrpc/connect/protocol-connect";
import { trailerFlag, trailerParse } from "@connectrpc/connect/protocol-grpc-web";
import { Code } from "../call/status.js";
import type { OnRejectedBeforeHandler } from "../server/grpc-rejections.js";

const COMPRESSED_FLAG = 0x01;
/** An error body or end message is a few hundred bytes; one larger than this is not read for its code. */
const MAX_ERROR_BYTES = 64 * 1024;

/**
 * Counts an answer the Connect project's handler gave without running our implementation: a request it could
 * not read, decompress or decode (compressed bodies, server-stream requests, gRPC-Web text: the forms the fast
 * paths leave to it), a malformed timeout, a missing message. Connect reports those to no one, so the code is
 * read back from what it answered, with its own parsers: a unary Connect error's JSON body, a stream's
 * end-stream message, gRPC-Web's trailer frame. Runs only for such answers (the chain counts every call it
 * runs); answers without a code (415, 405, 505) are not calls and are not counted. Returns the response, its
 * first chunk (already read) put back, or, for a unary binary body that does not decode, the answer rewritten
 * as invalid_argument (binaryParseRefusal).
 */
export async function countRefusal(
  res: UniversalServerResponse,
  path: string,
  onRejected: OnRejectedBeforeHandler,
): Promise<UniversalServerResponse> {
  const it = res.body?.[Symbol.asyncIterator]();
  if (!it) return res;
  const first = await it.next();
  if (first.done) return res;
  try {
    const found = await codeOf(res, first.value);
    const code = found instanceof ConnectError ? found.code : found;
    if (found instanceof ConnectError && found.code === ConnectCode.Internal && found.rawMessage.startsWith(PARSE_BINARY)) {
      onRejected(path, Code.INVALID_ARGUMENT);
      return binaryParseRefusal(res, found.rawMessage);
    }
    // connect-node's Aborted is its word for a client that hung up (as ProtocolCancellation reads it): a cancel.
    if (code !== undefined && code !== Code.OK) onRejected(path, code === Code.ABORTED ? Code.CANCELLED : code);
  } catch {
    // Not an answer of the shape we read: left uncounted, sent as it is.
  }
  return { ...res, body: prepended(first.value, it) };
}

/** How Connect's binary serialization words a message that does not decode (its code: internal). */
const PARSE_BINARY = "parse binary: ";

/**
 * Connect's handler answers a unary binary body that does not decode (a compressed one: the fast path leaves those
 * to it) 500 internal, where our fast path, the Connect GET and Connect's own JSON parser answer the same input
 * 400 invalid_argument, the Connect protocol's code for a malformed request. Connect has no option for it (its
 * serialization wraps every decode error as internal), so its answer is rewritten: the same message, with
 * invalid_argument's status and JSON error, uncompressed.
 */
function binaryParseRefusal(res: UniversalServerResponse, message: string): UniversalServerResponse {
  const error = new ConnectError(message, ConnectCode.InvalidArgument);
  const header = new Headers(res.header);
  header.delete("content-encoding");
  header.delete("content-length");
  header.set("content-type", "application/json");
  const body = errorToJsonBytes(error, undefined);
  return { ...res, status: codeToHttpStatus(error.code), header, body: only(body) };
}

/** The code of Connect's answer; for a unary Connect error, the error itself (its code and message). */
async function codeOf(res: UniversalServerResponse, chunk: Uint8Array): Promise<number | ConnectError | undefined> {
  const type = res.header?.get("content-type") ?? "";
  if (res.status !== 200) {
    // A unary Connect error: its JSON body, compressed as any unary body may be.
    if (!type.startsWith("application/json")) return undefined;
    const body = await decompressed(chunk, res.header?.get("content-encoding"));
    return errorFromJsonBytes(body, undefined, new ConnectError("not a Connect error", ConnectCode.Unknown));
  }
  if (chunk.byteLength < 5) return undefined;
  const flags = chunk[0]!;
  const length = new DataView(chunk.buffer, chunk.byteOffset, chunk.byteLength).getUint32(1);
  let data = chunk.subarray(5, 5 + length);
  if (type.startsWith("application/connect+")) {
    if ((flags & endStreamFlag) === 0) return undefined;
    if (flags & COMPRESSED_FLAG) data = await decompressed(data, res.header?.get("connect-content-encoding"));
    return endStreamFromJson(data).error?.code ?? 0;
  }
  if (type.startsWith("application/grpc-web")) {
    if ((flags & trailerFlag) === 0) return undefined;
    if (flags & COMPRESSED_FLAG) data = await decompressed(data, res.header?.get("grpc-encoding"));
    const status = trailerParse(data).get("grpc-status");
    return status === null ? undefined : Number(status);
  }
  return undefined;
}

function decompressed(data: Uint8Array, encoding: string | null | undefined): Promise<Uint8Array> | Uint8Array {
  if (!encoding || encoding === "identity") return data;
  const compression = [compressionGzip, compressionBrotli].find((c) => c.name === encoding);
  if (!compression) throw new Error(`unknown encoding ${encoding}`);
  return compression.decompress(data, MAX_ERROR_BYTES);
}

async function* prepended(first: Uint8Array, rest: AsyncIterator<Uint8Array>): AsyncIterable<Uint8Array> {
  yield first;
  yield* { [Symbol.asyncIterator]: () => rest }; // delegated, so a client that leaves ends the rest too
}

async function* only(chunk: Uint8Array): AsyncIterable<Uint8Array> {
  yield chunk;
}
