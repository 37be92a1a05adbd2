/**
 * `grpc-message` on the wire is percent-encoded: the gRPC spec has senders encode every byte outside printable
 * ASCII, and `%`, as %XX of its UTF-8, and receivers decode any %XX. grpc-js sends `encodeURI(message)`.
 */

/** A status message as a `grpc-message` value: unchanged when it is printable ASCII without `%`. */
export function encodeGrpcMessage(message: string): string {
  return /^[\x20-\x24\x26-\x7e]*$/.test(message) ? message : encodeURIComponent(message).replace(/%20/g, " ");
}

/**
 * A `grpc-message` value as the status message. Every %XX is decoded (`decodeURI` would keep %2F, %23, %3F,
 * %26 and the other reserved escapes as they are); a value that does not decode is kept as sent, as the spec asks.
 */
export function decodeGrpcMessage(value: string): string {
  if (!value.includes("%")) return value;
  try {
    return decodeURIComponent(value);
  } catch {
    return value;
  }
}
