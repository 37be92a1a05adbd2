import { constants, type IncomingHttpHeaders } from "node:http2";
import type { Metadata } from "@grpc/grpc-js";
import { Code, GrpcError } from "../call/status.js";
import { decodeGrpcMessage } from "../errors/grpc-message.js";

/**
 * How a gRPC response's headers, trailers and resets become metadata and a status, as grpc-js's
 * client reads them (its messages included), for the gateway's node:http2 client.
 */

/** Response headers or trailers as metadata: pseudo-headers skipped, `-bin` values base64-decoded. */
export function addHeaders(md: Metadata, headers: IncomingHttpHeaders, skip?: ReadonlySet<string>): void {
  for (const key in headers) {
    if (key.charCodeAt(0) === 58 /* ":" */ || skip?.has(key)) continue;
    const value = headers[key];
    if (value === undefined) continue;
    const values = Array.isArray(value) ? value : [value];
    try {
      if (!key.endsWith("-bin")) {
        for (const v of values) md.add(key, v);
        continue;
      }
      for (const v of values) {
        // Custom binary metadata may be folded into one comma-separated header (as grpc-js reads it).
        if (key.startsWith("grpc-")) md.add(key, Buffer.from(v, "base64"));
        else for (const part of v.split(",")) md.add(key, Buffer.from(part.trim(), "base64"));
      }
    } catch {
      // A key grpc-js's Metadata refuses is dropped, as grpc-js's client does (it logs it).
    }
  }
}

const STATUS_KEYS = new Set(["grpc-status", "grpc-message"]);

/**
 * The status the trailers (or a trailers-only response) carry; their other entries go to `trailer`.
 * Undefined for OK. `grpc-message` is percent-decoded (kept as sent when that fails).
 */
export function statusFromTrailers(headers: IncomingHttpHeaders, httpStatus: number, trailer: Metadata): GrpcError | undefined {
  addHeaders(trailer, headers, STATUS_KEYS);
  const status = headers["grpc-status"];
  if (typeof status !== "string") {
    if (httpStatus !== 200) return statusFromHttp(httpStatus, trailer);
    return new GrpcError(Code.UNKNOWN, "No status information received", { metadata: trailer });
  }
  const code = Number(status);
  if (code === Code.OK) return undefined;
  if (!Number.isInteger(code) || code < 0) return new GrpcError(Code.UNKNOWN, `invalid grpc-status "${status}"`, { metadata: trailer });
  return new GrpcError(code, grpcMessage(headers["grpc-message"]), { metadata: trailer });
}

function grpcMessage(value: string | string[] | undefined): string {
  return typeof value === "string" ? decodeGrpcMessage(value) : "";
}

/** A response that is not gRPC (no grpc-status): its HTTP status as gRPC's spec maps it. */
export function statusFromHttp(httpStatus: number, trailer: Metadata): GrpcError {
  const code = HTTP_CODES[httpStatus] ?? Code.UNKNOWN;
  return new GrpcError(code, `Received HTTP status code ${httpStatus}`, { metadata: trailer });
}

const HTTP_CODES: Record<number, Code> = {
  400: Code.INTERNAL,
  401: Code.UNAUTHENTICATED,
  403: Code.PERMISSION_DENIED,
  404: Code.UNIMPLEMENTED,
  429: Code.UNAVAILABLE,
  502: Code.UNAVAILABLE,
  503: Code.UNAVAILABLE,
  504: Code.UNAVAILABLE,
};

/**
 * The status of a stream that closed without trailers: a connection that failed or dropped is
 * UNAVAILABLE (so callers may retry), a reset by the server maps by its code.
 */
export function statusFromClose(rstCode: number, streamError: Error | undefined, connectionLost: boolean, trailer: Metadata): GrpcError {
  const errorCode = (streamError as NodeJS.ErrnoException | undefined)?.code;
  if (streamError && errorCode !== "ERR_HTTP2_STREAM_ERROR") {
    return new GrpcError(Code.UNAVAILABLE, `connection to the gRPC server failed: ${streamError.message}`, { metadata: trailer });
  }
  switch (rstCode) {
    case constants.NGHTTP2_REFUSED_STREAM:
      return new GrpcError(Code.UNAVAILABLE, "Stream refused by server", { metadata: trailer });
    case constants.NGHTTP2_CANCEL:
      return connectionLost
        ? new GrpcError(Code.UNAVAILABLE, "Connection dropped", { metadata: trailer })
        : new GrpcError(Code.CANCELLED, "Call cancelled", { metadata: trailer });
    case constants.NGHTTP2_ENHANCE_YOUR_CALM:
      return new GrpcError(Code.RESOURCE_EXHAUSTED, "Bandwidth exhausted or memory limit exceeded", { metadata: trailer });
    case constants.NGHTTP2_INADEQUATE_SECURITY:
      return new GrpcError(Code.PERMISSION_DENIED, "Protocol not secure enough", { metadata: trailer });
    case constants.NGHTTP2_NO_ERROR:
      if (connectionLost) return new GrpcError(Code.UNAVAILABLE, "Connection dropped", { metadata: trailer });
      return new GrpcError(Code.INTERNAL, `Received RST_STREAM with code ${rstCode} (Call ended without gRPC status)`, {
        metadata: trailer,
      });
    default:
      return new GrpcError(Code.INTERNAL, `Received RST_STREAM with code ${rstCode}`, { metadata: trailer });
  }
}
