import { create, createMutableRegistry, type Message, type Registry, toJson } from "@bufbuild/protobuf";
import { type Any, AnySchema, anyPack } from "@bufbuild/protobuf/wkt";
import type { Metadata, ServiceError } from "@grpc/grpc-js";
import { file_google_rpc_error_details } from "../../gen/google/rpc/error_details_pb.js";
import { StatusSchema } from "../../gen/google/rpc/status_pb.js";
import { asGrpcError, Code, GrpcError } from "../call/status.js";
import { binaryCodec } from "../codec/codec.js";

/** The standard trailer carrying a binary google.rpc.Status with typed details. */
const DETAILS_KEY = "grpc-status-details-bin";

/**
 * Message types that may appear as error details: the google.rpc set plus every
 * file the service registers at start-up (so its own detail types round-trip too).
 */
export const detailTypes = createMutableRegistry(file_google_rpc_error_details);

function pack(detail: Message, registry: Registry): Any | undefined {
  const desc = registry.getMessage(detail.$typeName);
  return desc ? anyPack(desc, detail) : undefined;
}

/**
 * A thrown error as the status grpc-js sends: code, message, and details in the standard
 * trailer, plus `extra` metadata (the call's response header and trailer). Sending them all as
 * trailers keeps the response trailers-only, which is what lets clients retry the call.
 */
export function toServiceError(err: unknown, ...extra: Metadata[]): Partial<ServiceError> & { code: Code } {
  const status = asGrpcError(err) ?? new GrpcError(Code.INTERNAL, "internal error", { cause: err });
  const metadata = status.metadata.clone();
  for (const md of extra) metadata.merge(md);
  if (status.details.length > 0) {
    const details = status.details.map((d) => pack(d, detailTypes)).filter((a): a is Any => a !== undefined);
    metadata.set(
      DETAILS_KEY,
      binaryCodec(StatusSchema).encode(create(StatusSchema, { code: status.code, message: status.message, details })),
    );
  }
  return { code: status.code, details: status.message, metadata };
}

/** The details a grpc-js client received in the standard trailer, still packed as Any. */
export function detailsFromMetadata(metadata: Metadata | undefined): Any[] {
  const bin = metadata?.get(DETAILS_KEY)[0];
  if (!(bin instanceof Buffer)) return [];
  try {
    return binaryCodec(StatusSchema).decode(bin).details;
  } catch {
    return []; // a malformed trailer loses the details, never the status
  }
}

/** The HTTP/JSON error body `{"code","message","details"}` shared with grpc-gateway; details carry `@type`. */
export function statusJson(code: Code, message: string, details: readonly (Any | Message)[]): string {
  return JSON.stringify({ code, message, details: details.map(detailJson) });
}

function detailJson(detail: Any | Message) {
  const any = detail.$typeName === "google.protobuf.Any" ? (detail as Any) : pack(detail, detailTypes);
  if (!any) return { "@type": `type.googleapis.com/${detail.$typeName}` };
  const desc = detailTypes.getMessage(any.typeUrl.slice(any.typeUrl.lastIndexOf("/") + 1));
  if (!desc) return { "@type": any.typeUrl, value: Buffer.from(any.value).toString("base64") };
  return toJson(AnySchema, any, { registry: detailTypes });
}
