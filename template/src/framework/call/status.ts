import type { Message } from "@bufbuild/protobuf";
import { Metadata, status } from "@grpc/grpc-js";

// An alias bound once: the bundle (esbuild) reads a binding imported from a CommonJS package through a getter
// on every use, and the codes are read on every call.
import Code = status;

export { Code };

/** gRPC code names as Go and Prometheus dashboards spell them (`InvalidArgument`, not `INVALID_ARGUMENT`). */
const CODE_NAMES = [
  "OK",
  "Canceled",
  "Unknown",
  "InvalidArgument",
  "DeadlineExceeded",
  "NotFound",
  "AlreadyExists",
  "PermissionDenied",
  "ResourceExhausted",
  "FailedPrecondition",
  "Aborted",
  "OutOfRange",
  "Unimplemented",
  "Internal",
  "Unavailable",
  "DataLoss",
  "Unauthenticated",
] as const;

export type CodeName = (typeof CODE_NAMES)[number];

export function codeName(code: number): CodeName | "Unknown" {
  return CODE_NAMES[code] ?? "Unknown";
}

export interface GrpcErrorOptions {
  /** Typed error details (e.g. google.rpc.BadRequest), sent in `grpc-status-details-bin` and as `details` over HTTP. */
  details?: Message[];
  /** Trailing metadata sent with the status. */
  metadata?: Metadata;
  cause?: unknown;
}

/**
 * The one error type a handler throws to answer with a status.
 * Anything else thrown is a bug: panic recovery turns it into INTERNAL "internal error".
 */
export class GrpcError extends Error {
  override readonly name = "GrpcError";
  readonly code: Code;
  readonly details: Message[];
  readonly metadata: Metadata;

  constructor(code: Code, message: string, options: GrpcErrorOptions = {}) {
    super(message, { cause: options.cause });
    this.code = code;
    this.details = options.details ?? [];
    this.metadata = options.metadata ?? new Metadata();
  }
}

/**
 * How a call the server ends because it is shutting down fails: UNAVAILABLE, which tells the client to
 * retry (elsewhere). One shared instance, so the error reporter can tell it from a real outage and skip it.
 * Its `retry-after` (seconds) becomes HTTP's Retry-After on a 503, as with overload protection's refusals.
 */
export const SHUTTING_DOWN = new GrpcError(Code.UNAVAILABLE, "server is shutting down", { metadata: retryAfterOneSecond() });

function retryAfterOneSecond(): Metadata {
  const metadata = new Metadata();
  metadata.set("retry-after", "1");
  return metadata;
}

/** The message of a call refused by overload protection (UNAVAILABLE; HTTP 503 with Retry-After). */
export const OVERLOADED_MESSAGE = "server overloaded: retry later";

/** A status error from a grpc-js client (code + details + metadata), e.g. from a downstream call. */
interface ServiceErrorLike {
  code: number;
  details: string;
  metadata: Metadata;
}

function isServiceErrorLike(err: unknown): err is ServiceErrorLike {
  const e = err as Partial<ServiceErrorLike> | null;
  return (
    typeof e === "object" &&
    e !== null &&
    typeof e.code === "number" &&
    e.code >= 0 &&
    e.code <= 16 &&
    typeof e.details === "string" &&
    e.metadata instanceof Metadata
  );
}

/**
 * The code a call ends with: OK without an error, the status's code, else INTERNAL (an
 * error that carries no status is a bug, and recovery answers it as INTERNAL).
 */
export function statusCode(err: unknown): Code {
  if (err === undefined) return Code.OK;
  if (err instanceof GrpcError) return err.code;
  return asGrpcError(err)?.code ?? Code.INTERNAL;
}

/**
 * A status-bearing error as a GrpcError, or undefined when `err` carries no status
 * (a plain Error, a string…), which is the caller's cue to treat it as a bug.
 */
export function asGrpcError(err: unknown): GrpcError | undefined {
  if (err instanceof GrpcError) return err;
  if (isServiceErrorLike(err)) return new GrpcError(err.code, err.details, { metadata: err.metadata, cause: err });
  return undefined;
}
