import type { IncomingMessage, ServerResponse } from "node:http";
import type { Message } from "@bufbuild/protobuf";
import type { Metadata } from "@grpc/grpc-js";
import { runInContext } from "../call/context.js";
import { deadlineIn, parseGrpcTimeout } from "../call/deadline.js";
import { asGrpcError, Code, GrpcError } from "../call/status.js";
import { binaryCodec } from "../codec/codec.js";
import { encodeGrpcMessage } from "../errors/grpc-message.js";
import { toServiceError } from "../errors/wire.js";
import { headersFromMetadata } from "../gateway/metadata.js";
import { BODIES_HELD, HeldBody, type PartialMessageBudget } from "../overload/partial-messages.js";
import { discardRest } from "../server/unread-body.js";
import { fastPathContext, type UnaryFastPath } from "./connect-bridge.js";

const TRAILER_FLAG = 0x80;
const CONTENT_TYPE = "application/grpc-web+proto";

/**
 * gRPC-Web's most common call, a unary POST of binary `application/grpc-web(+proto)` without
 * compression, served straight into our chain: one data frame in; headers, one data frame and the
 * trailer frame out (errors as a trailer frame alone, so a page reads the status without CORS header
 * exposure). Hand-written for that shape only, like connect-unary.ts and for the same measured reason;
 * everything else (text and JSON forms, compression, streams) returns false and goes to the Connect
 * project's handler.
 */
export const serveGrpcWebUnary: UnaryFastPath = (method, req, res, maxBytes, log, onRejected, partialMessages) => {
  if (req.method !== "POST") return false;
  const headers = req.headers;
  const type = headers["content-type"];
  if (type !== "application/grpc-web" && type !== CONTENT_TYPE) return false;
  const encoding = headers["grpc-encoding"];
  if (encoding !== undefined && encoding !== "identity") return false;
  let deadline: number;
  try {
    deadline = deadlineIn(parseGrpcTimeout(headers["grpc-timeout"]));
  } catch {
    return false; // Connect's handler words the error
  }

  const info = method.info;
  const ctx = fastPathContext(info, headers, res, deadline, "grpc-web");
  // A request that cannot be read or decoded never reaches the chain: counted here, with the code the client gets.
  const refused = (err: unknown): never => {
    onRejected?.(info.path, asGrpcError(err)?.code ?? Code.INTERNAL);
    throw err;
  };
  readFrame(req, res, maxBytes, partialMessages)
    .then((bytes) => {
      let request: Message;
      try {
        request = binaryCodec(info.desc.input).decode(bytes);
      } catch (err) {
        return refused(new GrpcError(Code.INVALID_ARGUMENT, `cannot decode request: ${(err as Error).message}`));
      }
      return runInContext(ctx, () => method.invoke({ method: info, ctx, request }));
    }, refused)
    .then(
      (result) => {
        if (!("message" in result)) throw new Error(`${info.path}: a stream answered a unary method`);
        const data = binaryCodec(info.desc.output).encode(result.message);
        const trailer = frame(TRAILER_FLAG, Buffer.from(`grpc-status: 0\r\ngrpc-message: \r\n${metadataLines(ctx.responseTrailer)}`));
        const head = headersFromMetadata(ctx.responseHeader, "") ?? {};
        head["content-type"] = CONTENT_TYPE;
        const body = Buffer.concat([frame(0, data), trailer]);
        head["content-length"] = String(body.length);
        res.writeHead(200, head).end(body);
      },
      (err: unknown) => {
        if (res.headersSent || res.destroyed) return;
        const status = toServiceError(err, ctx.responseHeader, ctx.responseTrailer);
        const text = `grpc-status: ${status.code}\r\ngrpc-message: ${encodeGrpcMessage(status.details ?? "")}\r\n${metadataLines(status.metadata as Metadata)}`;
        const body = frame(TRAILER_FLAG, Buffer.from(text));
        res.writeHead(200, { "content-type": CONTENT_TYPE, "content-length": String(body.length) }).end(body);
      },
    )
    .catch((err: unknown) => {
      log.debug({ err, path: info.path }, "grpc-web response failed");
      if (!res.headersSent) res.destroy();
    });
  return true;
};

function frame(flag: number, payload: Uint8Array): Buffer {
  const out = Buffer.allocUnsafe(5 + payload.byteLength);
  out[0] = flag;
  out.writeUInt32BE(payload.byteLength, 1);
  out.set(payload, 5);
  return out;
}

const ONE_FRAME = "the body must be exactly one gRPC-Web message frame";

/**
 * Reads the body: exactly one uncompressed data frame within `maxBytes`, its message bytes returned. The
 * request is ours before fastify's body limit applies, so the bound is kept here: refused as soon as the
 * declared length is over the limit or more bytes arrive than the frame declared, the rest discarded within
 * bounds (discardRest); while not yet whole it counts against MAX_PARTIAL_MESSAGE_BYTES.
 */
function readFrame(
  req: IncomingMessage,
  res: ServerResponse,
  maxBytes: number,
  budget: PartialMessageBudget | undefined,
): Promise<Uint8Array> {
  const counting = budget?.enabled === true ? budget : undefined;
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    let frameSize = -1; // 5 + the declared message length, once the frame header is in
    let held: HeldBody | undefined;
    const fail = (err: GrpcError) => {
      req.off("data", onData);
      req.off("end", onEnd);
      held?.release();
      discardRest(req, res);
      reject(err);
    };
    const onData = (chunk: Buffer) => {
      size += chunk.length;
      chunks.push(chunk);
      if (frameSize < 0 && size >= 5) {
        const head = chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks);
        chunks.length = 0;
        chunks.push(head);
        const length = head.readUInt32BE(1);
        if (length > maxBytes)
          return fail(new GrpcError(Code.RESOURCE_EXHAUSTED, `message of ${length} bytes is larger than the limit of ${maxBytes}`));
        if (head[0] !== 0) return fail(new GrpcError(Code.INVALID_ARGUMENT, "compressed message without grpc-encoding"));
        frameSize = 5 + length;
      }
      if (frameSize >= 0 && size > frameSize) return fail(new GrpcError(Code.INVALID_ARGUMENT, ONE_FRAME));
      if (counting === undefined || size === frameSize) return;
      held ??= new HeldBody(counting, req);
      if (!held.add(chunk.length)) fail(new GrpcError(Code.RESOURCE_EXHAUSTED, BODIES_HELD));
    };
    const onEnd = () => {
      held?.release();
      if (size !== frameSize) return reject(new GrpcError(Code.INVALID_ARGUMENT, ONE_FRAME));
      const body = chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks, size);
      resolve(body.subarray(5));
    };
    req.on("data", onData);
    req.once("end", onEnd);
    req.once("error", () => reject(new GrpcError(Code.CANCELLED, "request body broken")));
  });
}

/** Trailer metadata as the trailer frame's `key: value\r\n` lines (HTTP/1 header form, as Connect writes them) (the status details included). */
function metadataLines(md: Metadata): string {
  let text = "";
  const all = md.toJSON();
  for (const key in all) {
    if (key === "grpc-status" || key === "grpc-message") continue;
    for (const v of all[key]!) text += `${key}: ${typeof v === "string" ? v : v.toString("base64")}\r\n`;
  }
  return text;
}
