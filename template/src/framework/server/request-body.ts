import type { IncomingMessage } from "node:http";
import { errorCodes, type FastifyRequest } from "fastify";
import { Code, GrpcError } from "../call/status.js";
import { BODIES_HELD, HeldBody, type PartialMessageBudget } from "../overload/partial-messages.js";

/** What a content-type parser makes of a whole body: the value handlers get, or the error the client gets. */
export type ParseBody = (req: FastifyRequest, body: Buffer) => unknown;

/** fastify's content-type parser function form: (request, payload, done). */
type BodyParser = (req: FastifyRequest, payload: IncomingMessage, done: (err: Error | null, body?: unknown) => void) => void;

/**
 * A content-type parser that reads the body as fastify's own (`parseAs: "buffer"`) does, with the same limit
 * (GRPC_MAX_RECV_MSG_SIZE) and the same 413 and 400 answers, and counts the bytes of a body not yet whole
 * against MAX_PARTIAL_MESSAGE_BYTES, as the gRPC port does its messages: fastify's reader holds them with no
 * bound across requests (up to HTTP_MAX_CONNECTIONS × 100 streams × 4 MiB until HTTP_REQUEST_TIMEOUT_SECONDS),
 * and offers no hook into it but a stream wrapped around every body. Past the budget the request gets 429
 * (RESOURCE_EXHAUSTED) and its bytes are given back.
 *
 * Per request: one data and one end listener, as fastify's; a body that arrives with its Content-Length in one
 * read is never counted; a close listener only for a body that was.
 */
export function bodyParser(limit: number, budget: PartialMessageBudget | undefined, parse: ParseBody): BodyParser {
  const counting = budget?.enabled === true ? budget : undefined;
  return (req, payload, done) => {
    const contentLength = Number(req.headers["content-length"]);
    if (contentLength > limit) {
      done(new errorCodes.FST_ERR_CTP_BODY_TOO_LARGE());
      return;
    }
    const chunks: Buffer[] = [];
    let received = 0;
    let held: HeldBody | undefined;
    const finish = (err: Error | null, body?: unknown): void => {
      payload.removeListener("data", onData);
      payload.removeListener("end", onEnd);
      payload.removeListener("error", onEnd);
      held?.release();
      done(err, body);
    };
    function onData(chunk: Buffer): void {
      received += chunk.length;
      if (received > limit) return finish(new errorCodes.FST_ERR_CTP_BODY_TOO_LARGE());
      chunks.push(chunk);
      if (counting === undefined || received === contentLength) return;
      held ??= new HeldBody(counting, payload);
      if (!held.add(chunk.length)) return finish(new GrpcError(Code.RESOURCE_EXHAUSTED, BODIES_HELD));
    }
    function onEnd(err?: Error & { statusCode?: number }): void {
      if (err != null) {
        if (!(typeof err.statusCode === "number" && err.statusCode >= 400)) err.statusCode = 400;
        return finish(err);
      }
      if (!Number.isNaN(contentLength) && received !== contentLength) return finish(new errorCodes.FST_ERR_CTP_INVALID_CONTENT_LENGTH());
      // Always a copy: a parser must not keep a view of the socket's shared read buffer.
      let body: unknown;
      try {
        body = parse(req, Buffer.concat(chunks, received));
      } catch (e) {
        return finish(e as Error);
      }
      if (body instanceof Error) finish(body);
      else finish(null, body);
    }
    payload.on("data", onData);
    payload.on("end", onEnd);
    payload.on("error", onEnd);
    payload.resume();
  };
}
