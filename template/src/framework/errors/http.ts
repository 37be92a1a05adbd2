import type { Message } from "@bufbuild/protobuf";
import type { Any } from "@bufbuild/protobuf/wkt";
import type { FastifyReply } from "fastify";
import { asGrpcError, Code, GrpcError } from "../call/status.js";
import { httpStatusFromCode } from "./http-status.js";
import { detailsFromMetadata, statusJson } from "./wire.js";

export interface HttpError {
  status: number;
  code: Code;
  body: string;
  headers: Record<string, string>;
}

/**
 * A message of a streamed request body over the receive size limit: RESOURCE_EXHAUSTED, answered 413
 * (Payload Too Large) as a whole body over the limit is, not the 429 the code maps to.
 */
export class MessageTooLargeError extends GrpcError {
  constructor(size: number, max: number) {
    super(Code.RESOURCE_EXHAUSTED, `request message larger than max (${size} vs. ${max} bytes)`);
  }
}

/** A request body of a content type the route does not take: INVALID_ARGUMENT, answered 415 (Unsupported Media Type). */
export class UnsupportedMediaTypeError extends GrpcError {
  constructor(message: string) {
    super(Code.INVALID_ARGUMENT, message);
  }
}

/** Any failure as the gateway's JSON error: the status from the code table, `{"code","message","details"}`. */
export function httpError(err: unknown): HttpError {
  const status = asGrpcError(err) ?? new GrpcError(Code.INTERNAL, "internal error");
  // From a grpc-js client the details arrive packed in the trailer; in-process they are still messages.
  const details: (Any | Message)[] = status.details.length > 0 ? status.details : detailsFromMetadata(status.metadata);
  const headers: Record<string, string> = {};
  if (status.code === Code.UNAUTHENTICATED) headers["www-authenticate"] = "Bearer";
  const retryAfter = status.metadata.get("retry-after")[0];
  if (typeof retryAfter === "string") headers["retry-after"] = retryAfter;
  const httpStatus =
    status instanceof MessageTooLargeError ? 413 : status instanceof UnsupportedMediaTypeError ? 415 : httpStatusFromCode(status.code);
  return { status: httpStatus, code: status.code, body: statusJson(status.code, status.message, details), headers };
}

export function sendHttpError(reply: FastifyReply, err: unknown, extraHeaders?: Record<string, string | string[]>): FastifyReply {
  const e = httpError(err);
  if (extraHeaders) reply.headers(extraHeaders);
  return reply.code(e.status).headers(e.headers).type("application/json").send(e.body);
}
