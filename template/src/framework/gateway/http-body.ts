import type { ServerResponse } from "node:http";
import { create, type DescField, type DescMessage, type Message, type MessageInitShape } from "@bufbuild/protobuf";
import { errorCodes, type FastifyInstance, type FastifyReply, type FastifyRequest } from "fastify";
import { type HttpBody, HttpBodySchema } from "../../gen/google/api/httpbody_pb.js";
import { bodyParserFor, JSON_BODY_TYPES, utf8Text } from "../server/http-server.js";
import type { GatewayRoute } from "./routes.js";

/**
 * google.api.HttpBody over the gateway, as grpc-gateway does it: a method that takes or returns one
 * passes the HTTP body through as raw bytes with its own Content-Type instead of proto3 JSON.
 */

const HTTP_BODY = "google.api.HttpBody";
/** What an HttpBody response with no `content_type` is sent as. */
export const DEFAULT_CONTENT_TYPE = "application/octet-stream";

export function isHttpBodyMessage(desc: DescMessage): boolean {
  return desc.typeName === HTTP_BODY;
}

/** A singular google.api.HttpBody field (a repeated one is plain JSON). */
export function isHttpBodyField(field: DescField): boolean {
  return field.fieldKind === "message" && isHttpBodyMessage(field.message);
}

/** The body of a request to an HttpBody route as it came: its bytes and Content-Type. */
export class RawBody {
  constructor(
    readonly data: Uint8Array,
    readonly contentType: string,
  ) {}
}

/**
 * Lets requests to HttpBody routes carry any content type (any other route keeps the 415): JSON stays
 * a UTF-8 string elsewhere, but reaches an HttpBody route as its bytes, invalid UTF-8 and all. Bodies are read as
 * every other (server/request-body.ts: within GRPC_MAX_RECV_MSG_SIZE and MAX_PARTIAL_MESSAGE_BYTES). Parsers are per fastify instance, so this is only
 * registered when some route takes an HttpBody.
 */
export function acceptRawBodies(app: FastifyInstance, isRawRoute: (req: FastifyRequest) => boolean): void {
  const raw = (req: FastifyRequest, body: Buffer) => new RawBody(body, req.headers["content-type"] ?? "");
  // Replaces http-server.ts's JSON parser with the same one for every other route.
  app.removeContentTypeParser(JSON_BODY_TYPES);
  app.addContentTypeParser(
    JSON_BODY_TYPES,
    bodyParserFor(app, (req, body) => (isRawRoute(req) ? raw(req, body) : utf8Text(body))),
  );
  app.addContentTypeParser(
    "*",
    bodyParserFor(app, (req, body) =>
      isRawRoute(req) ? raw(req, body) : new errorCodes.FST_ERR_CTP_INVALID_MEDIA_TYPE(req.headers["content-type"]),
    ),
  );
}

/** The request message of an HttpBody route: the raw body as the HttpBody itself (`body: "*"`) or as the body field. */
export function rawRequestMessage(route: GatewayRoute, body: RawBody): Message {
  const httpBody = create(HttpBodySchema, { data: body.data, contentType: body.contentType });
  if (!route.bodyField) return httpBody;
  const input = route.method.info.desc.input;
  return create(input, { [route.bodyField.localName]: httpBody } as MessageInitShape<DescMessage>);
}

/** The HttpBody a response carries: the message itself, or its `response_body` field (maybe unset). */
function httpBodyOf(route: GatewayRoute, message: Message): HttpBody | undefined {
  const field = route.responseBodyField;
  if (!field) return message as HttpBody;
  return (message as unknown as Record<string, HttpBody | undefined>)[field.localName];
}

/** The bytes to write for one response message, without a copy. */
export function rawResponseData(route: GatewayRoute, message: Message): Buffer {
  const data = httpBodyOf(route, message)?.data;
  return data ? Buffer.from(data.buffer, data.byteOffset, data.byteLength) : Buffer.alloc(0);
}

/** The Content-Type of a response message; the first message's sets a stream's. */
export function rawResponseType(route: GatewayRoute, message: Message): string {
  return httpBodyOf(route, message)?.contentType || DEFAULT_CONTENT_TYPE;
}

/** A unary HttpBody response: its bytes as they are, 200, its Content-Type (compressed only if that type is text-like). */
export function sendRawResponse(reply: FastifyReply, route: GatewayRoute, message: Message): FastifyReply {
  return reply.header("content-type", rawResponseType(route, message)).send(rawResponseData(route, message));
}

/**
 * Ends an HttpBody stream that failed after its headers went out. grpc-gateway appends an
 * `{"error":…}` line, which would corrupt a binary body; here the connection closes without the
 * last chunk instead, so a client sees a truncated body (an error), never a complete-looking file.
 * What was written before still arrives: the response's own buffer goes to the socket first (Node 24.22 corks
 * a response on its first write until the next tick, so the writes of this turn are still in it), the socket
 * ends after flushing, then is destroyed.
 */
export function abortRawStream(raw: ServerResponse): void {
  const socket = raw.socket;
  if (!socket || socket.destroyed) {
    raw.destroy();
    return;
  }
  while (raw.writableCorked > 0) raw.uncork();
  socket.once("finish", () => socket.destroy());
  socket.end();
}
