import type { IncomingHttpHeaders } from "node:http";
import { Metadata } from "@grpc/grpc-js";

export interface HeaderPolicy {
  traceHeader: string;
  debugHeader: string;
  /** Lower-cased prefixes from HTTP_HEADER_PREFIXES. */
  prefixes: readonly string[];
}

export const METADATA_PREFIX = "grpc-metadata-";
export const TRAILER_PREFIX = "grpc-trailer-";
/** W3C trace context, so a gateway call continues the HTTP caller's trace. */
const W3C_TRACE = new Set(["traceparent", "tracestate"]);
/** Transport headers grpc-js reports as metadata; they describe the gRPC hop, not the call. */
const TRANSPORT_KEYS = new Set(["content-type", "date", "user-agent", "te", "content-length"]);
const VALID_KEY = /^[0-9a-z._-]+$/;
const PRINTABLE_ASCII = /^[\x20-\x7e]*$/;

/**
 * The HTTP headers that become gRPC metadata: authorization, the trace and debug headers,
 * W3C `traceparent`/`tracestate`, `Grpc-Metadata-*` (prefix stripped) and anything under HTTP_HEADER_PREFIXES. Everything
 * else stays at the HTTP edge. `-bin` keys carry base64; a text value that is not printable
 * ASCII, or a key gRPC cannot carry, is dropped, never fatal.
 */
export function metadataFromHeaders(headers: IncomingHttpHeaders, policy: HeaderPolicy): Metadata {
  const md = new Metadata();
  for (const name in headers) {
    const value = headers[name];
    if (value === undefined) continue;
    let key: string | undefined;
    if (name === "authorization" || name === policy.traceHeader || name === policy.debugHeader || W3C_TRACE.has(name)) key = name;
    else if (name.startsWith(METADATA_PREFIX)) key = name.slice(METADATA_PREFIX.length);
    else if (policy.prefixes.length > 0 && policy.prefixes.some((p) => name.startsWith(p))) key = name;
    if (!key || key.startsWith("grpc-") || !VALID_KEY.test(key)) continue;
    const binary = key.endsWith("-bin");
    for (const v of Array.isArray(value) ? value : [value]) {
      if (binary) md.add(key, Buffer.from(v, "base64"));
      else if (PRINTABLE_ASCII.test(v)) {
        // Two header names for one key (Authorization and Grpc-Metadata-Authorization): one value, joined as Node
        // joins repeated headers. Auth then sees a repeated credential, and HTTP/2 can carry it (it refuses two
        // values of authorization, user-agent and the like).
        const first = md.get(key)[0];
        if (typeof first === "string") md.set(key, `${first}, ${v}`);
        else md.add(key, v);
      }
    }
  }
  return md;
}

/**
 * Response metadata as HTTP headers: `<prefix><key>` (the gateway's `Grpc-Metadata-` or `Grpc-Trailer-`, none
 * for gRPC-Web, Connect's `trailer-`), binary values in base64, repeated keys as repeated headers; reserved
 * `grpc-` keys and transport headers stay out. The trace header keeps its own name. `undefined` when there is
 * nothing to send.
 */
export function headersFromMetadata(md: Metadata, prefix: string, traceHeader?: string): Record<string, string | string[]> | undefined {
  let headers: Record<string, string | string[]> | undefined;
  const all = md.toJSON();
  for (const key in all) {
    const values = all[key]!;
    if (!sentAsHeader(key) || values.length === 0) continue;
    const texts = values.map((v) => (typeof v === "string" ? v : v.toString("base64")));
    headers ??= {};
    headers[headerName(key, prefix, traceHeader)] = texts.length === 1 ? texts[0]! : texts;
  }
  return headers;
}

/**
 * `headersFromMetadata` of a call's response header without making metadata for it: the context's
 * header metadata if something made them, else its one text entry (the trace ID), if any.
 */
export function responseHeaders(
  entries: Metadata | readonly [key: string, value: string] | undefined,
  traceHeader: string,
): Record<string, string | string[]> | undefined {
  if (entries === undefined) return undefined;
  if (entries instanceof Metadata) return headersFromMetadata(entries, METADATA_PREFIX, traceHeader);
  const [key, value] = entries;
  return sentAsHeader(key) ? { [headerName(key, METADATA_PREFIX, traceHeader)]: value } : undefined;
}

/** Whether a metadata key goes out as an HTTP header (not gRPC's own keys, not the gRPC hop's transport headers). */
function sentAsHeader(key: string): boolean {
  return !key.startsWith("grpc-") && !TRANSPORT_KEYS.has(key);
}

/** The HTTP header of a metadata key: the trace header keeps its own name, others take the prefix. */
function headerName(key: string, prefix: string, traceHeader: string | undefined): string {
  return key === traceHeader ? key : prefix + key;
}
