import Fastify, { type FastifyError, type FastifyInstance } from "fastify";
import type { Config } from "../config/schema.js";
import { Code, GrpcError } from "../errors/status.js";
import { httpError, sendHttpError } from "../gateway/errors.js";

/** fastify's own failures (body too large, bad content type…) as gRPC codes, so every error body is the same JSON. */
function codeForFastifyError(err: FastifyError): Code {
  switch (err.statusCode) {
    case 413:
      return Code.RESOURCE_EXHAUSTED;
    case 404:
      return Code.NOT_FOUND;
    default:
      return (err.statusCode ?? 500) < 500 ? Code.INVALID_ARGUMENT : Code.INTERNAL;
  }
}

/**
 * The HTTP server: JSON bodies are kept as text for the gateway to decode straight into
 * messages, and every error — ours or fastify's — leaves as `{"code","message","details"}`.
 */
export function createHttpServer(config: Config): FastifyInstance {
  const app = Fastify({
    logger: false,
    bodyLimit: config.GRPC_MAX_RECV_MSG_SIZE,
    return503OnClosing: true,
  });
  app.removeContentTypeParser(["application/json", "text/plain"]);
  app.addContentTypeParser(["application/json", "text/plain"], { parseAs: "string" }, (_req, body, done) => done(null, body));
  app.setErrorHandler((err: FastifyError, _req, reply) => {
    if (err instanceof GrpcError) return sendHttpError(reply, err);
    // fastify's own status stays (413, 415…); the body says the same in gRPC terms.
    const status = err.statusCode ?? 500;
    const e = httpError(new GrpcError(codeForFastifyError(err), status >= 500 ? "internal error" : err.message));
    return reply.code(status).type("application/json").send(e.body);
  });
  app.setNotFoundHandler((_req, reply) => sendHttpError(reply, new GrpcError(Code.NOT_FOUND, "Not Found")));
  return app;
}
