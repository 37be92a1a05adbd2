import { Code as ConnectCode, ConnectError } from "@connectrpc/connect";
import type { UniversalServerRequest, UniversalServerResponse } from "@connectrpc/connect/protocol";

/**
 * gRPC-Web's base64 text form (`application/grpc-web-text`, what grpc-web's JS client sends in
 * text mode), translated at the edge to and from the binary form the Connect project's handler
 * serves: it implements the binary forms only. Hand-written because nothing else does it: the
 * request body is decoded as it streams in, each response chunk (one frame) leaves base64-encoded
 * with its own padding, as the protocol allows.
 */
const TEXT_TYPE = /^application\/grpc-web-text(?:\+proto)?(?:;|$)/i;

export function isGrpcWebText(contentType: string | undefined): boolean {
  return contentType !== undefined && TEXT_TYPE.test(contentType);
}

/** The request as binary gRPC-Web: same call, content type `application/grpc-web+proto`, decoded body. */
export function decodeTextRequest(req: UniversalServerRequest): UniversalServerRequest {
  const header = new Headers(req.header);
  header.set("content-type", "application/grpc-web+proto");
  return { ...req, header, body: decodeBase64Stream(req.body as AsyncIterable<Uint8Array>) };
}

/** The response in the text form: `application/grpc-web-text+proto`, each body chunk base64-encoded. */
export function encodeTextResponse(res: UniversalServerResponse): UniversalServerResponse {
  const header = new Headers(res.header);
  const type = header.get("content-type");
  if (type?.startsWith("application/grpc-web")) header.set("content-type", "application/grpc-web-text+proto");
  return { ...res, header, body: res.body && encodeBase64Stream(res.body) };
}

/** Complete 4-character groups, each group decoded on its own: a client may pad every frame separately. */
const QUADS = /^(?:[A-Za-z0-9+/]{4}|[A-Za-z0-9+/]{3}=|[A-Za-z0-9+/]{2}==)*/;

async function* decodeBase64Stream(body: AsyncIterable<Uint8Array>): AsyncGenerator<Uint8Array> {
  let pending = "";
  for await (const chunk of body) {
    pending += Buffer.from(chunk).toString("latin1");
    const whole = QUADS.exec(pending)![0];
    // Anything after the whole groups must be the start of a group: else the body is not base64.
    if (pending.length - whole.length >= 4) throw notBase64();
    if (whole.length > 0) {
      yield decodeGroups(whole);
      pending = pending.slice(whole.length);
    }
  }
  if (pending.length > 0) throw notBase64();
}

/** Groups with padding in the middle (separately padded frames) are decoded piece by piece. */
function decodeGroups(text: string): Buffer {
  if (!text.slice(0, -1).includes("=")) return Buffer.from(text, "base64");
  const parts: Buffer[] = [];
  for (let i = 0; i < text.length; i += 4) parts.push(Buffer.from(text.slice(i, i + 4), "base64"));
  return Buffer.concat(parts);
}

function notBase64(): ConnectError {
  return new ConnectError("request body is not base64 (application/grpc-web-text)", ConnectCode.InvalidArgument);
}

async function* encodeBase64Stream(body: AsyncIterable<Uint8Array>): AsyncGenerator<Uint8Array> {
  for await (const chunk of body) yield Buffer.from(Buffer.from(chunk.buffer, chunk.byteOffset, chunk.byteLength).toString("base64"));
}
