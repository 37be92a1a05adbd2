import type { IncomingHttpHeaders } from "node:http";
import { Metadata } from "@grpc/grpc-js";

export interface HeaderPolicy {
  traceHeader: string;
  debugHeader: string;
  /** Lower-cased prefixes from HTTP_HEADER_PREFIXES. */
  prefixes: readonly string[];
}

const METADATA_PREFIX = "grpc-metadata-";
/** W3C trace context, so a gateway call continues the HTTP caller's trace. */
const W3C_TRACE = new Set(["traceparent", "tracestate"]);
/** Transport headers grpc-js reports as metadata; they describe the gRPC hop, not the call. */
const TRANSPORT_KEYS = new Set(["content-type", "date", "user-agent", "te", "content-length"]);

/**
 * The HTTP headers that become gRPC metadata: authorization, the trace and debug headers,
 * `Grpc-Metadata-*` (prefix stripped) and anything under HTTP_HEADER_PREFIXES. Everything
 * else stays at the HTTP edge.
 */
export function metadataFromHeaders(headers: IncomingHttpHeaders, policy: HeaderPolicy): Metadata {
  const md = new Metadata();
  for (const name in headers) {
    const value = headers[name];
    if (value === undefined) continue;
    let key: string | undefined;
    if (name === "authorization" || name === policy.traceHeader || name === policy.debugHeader || W3C_TRACE.has(name)) key = name;
    else if (name.startsWith(METADATA_PREFIX)) key = name.slice(METADATA_PREFIX.length);
    else if (policy.prefixes.some((p) => name.startsWith(p))) key = name;
    if (!key || key.endsWith("-bin") || !/^[0-9a-z._-]+$/.test(key)) continue;
    for (const v of Array.isArray(value) ? value : [value]) {
      // Metadata values must be printable ASCII; a header that is not is dropped, not fatal.
      if (/^[\x20-\x7e]*$/.test(v)) md.add(key, v);
    }
  }
  return md;
}

/** Response metadata as HTTP headers: `Grpc-Metadata-<key>` (or `Grpc-Trailer-<key>`); the trace header keeps its own name. */
export function headersFromMetadata(md: Metadata, prefix: string, traceHeader: string): Record<string, string> {
  const headers: Record<string, string> = {};
  for (const [key, value] of Object.entries(md.getMap())) {
    if (typeof value !== "string" || key.startsWith("grpc-") || TRANSPORT_KEYS.has(key)) continue;
    headers[key === traceHeader ? key : `${prefix}${key}`] = value;
  }
  return headers;
}
