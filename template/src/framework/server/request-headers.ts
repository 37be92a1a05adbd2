import type { IncomingHttpHeaders } from "node:http";
import { grpcTimeoutWithinTimer } from "../call/deadline.js";

/**
 * Node keeps only the first of repeated `authorization` headers, over HTTP/1.1 and HTTP/2 alike, and drops
 * the others silently: a request with two would be authenticated with whichever came first (and a proxy in
 * front may have looked at the other). Joined instead, as Node joins most repeated headers (", "), the value is
 * not one credential any more and auth rejects it. The raw list is scanned only when the header is there.
 */
export function joinRepeatedAuthorization(headers: IncomingHttpHeaders, rawHeaders: readonly string[]): void {
  if (headers.authorization === undefined) return;
  let values: string[] | undefined;
  for (let i = 0; i < rawHeaders.length; i += 2) {
    const name = rawHeaders[i]!;
    if (name.length === 13 && (name === "authorization" || name === "Authorization" || name.toLowerCase() === "authorization")) {
      (values ??= []).push(rawHeaders[i + 1] ?? "");
    }
  }
  if (values !== undefined && values.length > 1) headers.authorization = values.join(", ");
}

/**
 * grpc-js reads `grpc-timeout` as `(digits * unit) | 0`: above 2^31-1 ms the 32-bit truncation makes it negative
 * or wrong, and its deadline timer ends the call at once. Rewritten before grpc-js sees it.
 */
export function clampGrpcTimeout(headers: IncomingHttpHeaders): void {
  const value = headers["grpc-timeout"];
  if (typeof value === "string") headers["grpc-timeout"] = grpcTimeoutWithinTimer(value);
}
