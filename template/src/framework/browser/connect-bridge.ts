import type { IncomingHttpHeaders, IncomingMessage, ServerResponse } from "node:http";
import type { DescMessage, Message, MessageShape } from "@bufbuild/protobuf";
import { anyUnpack } from "@bufbuild/protobuf/wkt";
import { type Code as ConnectCode, ConnectError } from "@connectrpc/connect";
import { Metadata } from "@grpc/grpc-js";
import type { Logger } from "pino";
import { CallContext } from "../call/context.js";
import { LazyAbortController } from "../call/lazy-abort.js";
import { asGrpcError, Code, GrpcError } from "../call/status.js";
import type { MethodInfo } from "../call/types.js";
import { detailsFromMetadata, detailTypes } from "../errors/wire.js";
import { headersFromMetadata } from "../gateway/metadata.js";
import type { PartialMessageBudget } from "../overload/partial-messages.js";
import type { OnRejectedBeforeHandler } from "../server/grpc-rejections.js";
import type { BoundMethod } from "../server/methods.js";

// Between our call model and the Connect project's: metadata, and errors with their details.

/**
 * Request headers that describe the HTTP exchange or the protocol, not the call: everything else
 * becomes call metadata, as gRPC-Web and Connect clients send custom metadata as plain headers.
 */
const NOT_METADATA = new Set([
  "host",
  "connection",
  "keep-alive",
  "transfer-encoding",
  "upgrade",
  "te",
  "content-type",
  "content-length",
  "content-encoding",
  "accept",
  "accept-encoding",
  "accept-language",
  "user-agent",
  "origin",
  "referer",
  "cookie",
  "priority",
  "pragma",
  "cache-control",
  "connect-protocol-version",
  "connect-timeout-ms",
  "connect-content-encoding",
  "connect-accept-encoding",
  "x-grpc-web",
  "x-user-agent",
]);
const VALID_KEY = /^[0-9a-z._-]+$/;
const PRINTABLE_ASCII = /^[\x20-\x7e]*$/;

/** The headers of a gRPC-Web or Connect request as call metadata (`-bin` keys carry base64). */
export function metadataOf(headers: IncomingHttpHeaders): Metadata {
  const md = new Metadata();
  for (const name in headers) {
    if (NOT_METADATA.has(name) || name.startsWith("grpc-") || name.startsWith("sec-") || !VALID_KEY.test(name)) continue;
    const value = headers[name];
    if (value === undefined) continue;
    const binary = name.endsWith("-bin");
    for (const v of Array.isArray(value) ? value : [value]) {
      if (binary) md.add(name, Buffer.from(v, "base64"));
      else if (PRINTABLE_ASCII.test(v)) md.add(name, v);
    }
  }
  return md;
}

/**
 * A hand-written path for one protocol's most common unary shape (connect-unary.ts, grpc-web-unary.ts): serves
 * the request and returns true, or returns false at once for anything else, which the Connect project's handler
 * serves. A request it cannot read or decode is reported to `onRejected` with the code it answers.
 */
export type UnaryFastPath = (
  method: BoundMethod,
  req: IncomingMessage,
  res: ServerResponse,
  maxBytes: number,
  log: Logger,
  onRejected: OnRejectedBeforeHandler | undefined,
  /** MAX_PARTIAL_MESSAGE_BYTES, which the body counts against while not yet whole. */
  partialMessages: PartialMessageBudget | undefined,
) => boolean;

/**
 * The context of a unary call served straight from the HTTP exchange (the Connect and gRPC-Web fast
 * paths): its signal aborts when the client goes away before the answer is out.
 */
export function fastPathContext(
  info: MethodInfo,
  headers: IncomingHttpHeaders,
  res: ServerResponse,
  deadline: number,
  protocol: "connect" | "grpc-web",
): CallContext {
  const controller = new LazyAbortController();
  // Closed before the response was ended and flushed: the client left. (Both: over HTTP/2 a stream the client
  // reset closes its response as flushed, though nothing ended it.)
  res.once("close", () => {
    if (!(res.writableEnded && res.writableFinished)) controller.abort();
  });
  const ctx = new CallContext({
    method: info,
    transport: "http",
    metadata: metadataOf(headers),
    controller,
    deadline,
    httpPath: info.path,
  });
  ctx.fields.protocol = protocol;
  return ctx;
}

/** Response metadata onto the protocol's headers or trailers (reserved `grpc-` keys stay out). */
export function copyMetadata(md: Metadata, headers: Headers): void {
  const head = headersFromMetadata(md, "");
  for (const key in head) {
    const value = head[key]!;
    if (typeof value === "string") headers.append(key, value);
    else for (const v of value) headers.append(key, v);
  }
}

/** A failed call in the protocol's terms: code, message, typed details; its metadata as headers (or trailers). */
export function connectError(err: unknown, ctx: CallContext): ConnectError {
  const status = asGrpcError(err) ?? new GrpcError(Code.INTERNAL, "internal error");
  const headers = new Headers();
  copyMetadata(status.metadata, headers);
  copyMetadata(ctx.responseHeader, headers);
  copyMetadata(ctx.responseTrailer, headers);
  if (status.code === Code.UNAUTHENTICATED) headers.set("www-authenticate", "Bearer");
  // In-process the details are still messages; from a downstream gRPC call they come packed in its trailer.
  const messages: Message[] =
    status.details.length > 0
      ? status.details
      : detailsFromMetadata(status.metadata)
          .map((any) => anyUnpack(any, detailTypes))
          .filter((m): m is Message => m !== undefined);
  const details = messages.flatMap((value) => {
    const desc = detailTypes.getMessage(value.$typeName);
    return desc ? [{ desc, value: value as MessageShape<DescMessage> }] : [];
  });
  return new ConnectError(status.message, status.code as number as ConnectCode, headers, details);
}
