import compress from "@fastify/compress";
import Fastify, { type FastifyError, type FastifyInstance, type FastifyReply } from "fastify";
import type { Config } from "../config/schema.js";
import { Code, GrpcError } from "../errors/status.js";
import { statusJson } from "../errors/wire.js";
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

/** Compressed content types: JSON, text (not event streams), JavaScript, XML and SVG. */
const COMPRESSIBLE = /^text\/(?!event-stream)|[+/]json(?:;|$)|^application\/(?:javascript|xml)|[+/]xml(?:;|$)/;

/** A fastify failure as our JSON error, keeping fastify's status (413, 415…). */
function sendFastifyError(err: FastifyError, reply: FastifyReply): FastifyReply {
  const status = err.statusCode ?? 500;
  const e = httpError(new GrpcError(codeForFastifyError(err), status >= 500 ? "internal error" : err.message));
  return reply.code(status).type("application/json").send(e.body);
}

/**
 * The HTTP server: JSON bodies are kept as text for the gateway to decode straight into
 * messages, and every error — ours or fastify's — leaves as `{"code","message","details"}`.
 * Responses of 1 KiB and more are gzip/brotli-compressed when the client accepts it (not
 * event streams; DISABLE_HTTP_COMPRESSION=true turns it off). Routes added after this
 * resolves are covered.
 */
export async function createHttpServer(config: Config): Promise<FastifyInstance> {
  const app = Fastify({
    logger: false,
    bodyLimit: config.GRPC_MAX_RECV_MSG_SIZE,
    return503OnClosing: true,
    // A malformed percent-escape in the path, before any route runs.
    frameworkErrors: (err, _req, reply) => {
      const bad = err.code === "FST_ERR_BAD_URL";
      return bad
        ? sendHttpError(reply, new GrpcError(Code.INVALID_ARGUMENT, "malformed percent-encoding in path"))
        : sendFastifyError(err, reply);
    },
  });
  if (!config.DISABLE_HTTP_COMPRESSION) {
    // Text-like bodies only: binaries (pprof, images) are compressed already or not worth it, and the
    // plugin would relabel a gzip body as Content-Encoding: gzip. mime-db calls octet-stream
    // compressible, so other types opt out through the plugin's own switch; this root hook runs
    // before the plugin's route hooks. Brotli at quality 4 (11 is far too slow per request).
    app.addHook("onSend", (req, reply, payload, done) => {
      const type = reply.getHeader("content-type");
      if (typeof type !== "string" || !COMPRESSIBLE.test(type)) req.headers["x-no-compression"] = "1";
      done(null, payload);
    });
    await app.register(compress, {
      global: true,
      threshold: 1024,
      encodings: ["br", "gzip"],
      customTypes: COMPRESSIBLE,
      globalDecompression: false,
    });
  }
  app.removeContentTypeParser(["application/json", "text/plain"]);
  app.addContentTypeParser(["application/json", "text/plain"], { parseAs: "string" }, (_req, body, done) => done(null, body));
  app.setErrorHandler((err: FastifyError, req, reply) => {
    if (err instanceof GrpcError) return sendHttpError(reply, err);
    if (err.code === "FST_ERR_CTP_INVALID_MEDIA_TYPE") {
      const message = `unsupported content type "${req.headers["content-type"]}": send application/json`;
      return reply
        .code(415)
        .type("application/json")
        .send(statusJson(Code.INVALID_ARGUMENT, message, []));
    }
    // fastify's own status stays (413, 415…); the body says the same in gRPC terms.
    return sendFastifyError(err, reply);
  });
  app.setNotFoundHandler((_req, reply) => sendHttpError(reply, new GrpcError(Code.NOT_FOUND, "Not Found")));
  return app;
}
