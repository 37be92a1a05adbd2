import { type Message, toJson, toJsonString } from "@bufbuild/protobuf";
import type { FastifyInstance, FastifyReply, FastifyRequest } from "fastify";
import { asGrpcError, Code, GrpcError } from "../errors/status.js";
import { httpError, sendHttpError } from "./errors.js";
import type { GatewayCall, Invoker } from "./invoker.js";
import { type HeaderPolicy, headersFromMetadata, metadataFromHeaders } from "./metadata.js";
import { decodeRequest } from "./request.js";
import { Router } from "./router.js";
import type { GatewayRoute } from "./routes.js";

export interface GatewayOptions {
  routes: readonly GatewayRoute[];
  invoker: Invoker;
  headers: HeaderPolicy;
}

const JSON_WRITE = { alwaysEmitImplicit: true } as const;
const METHODS = ["GET", "HEAD", "POST", "PUT", "DELETE", "PATCH", "OPTIONS"];

/** Serialises a response message, or just its `response_body` field, as canonical proto3 JSON. */
function responseJson(route: GatewayRoute, message: Message): string {
  const output = route.method.info.desc.output;
  if (!route.responseBodyField) return toJsonString(output, message, JSON_WRITE);
  const json = toJson(output, message, JSON_WRITE) as Record<string, unknown>;
  return JSON.stringify(json[route.responseBodyField.jsonName] ?? null);
}

/**
 * The REST/JSON gateway: one catch-all fastify route that matches the compiled
 * google.api.http templates, decodes the request, invokes the method and writes JSON.
 */
export function registerGateway(app: FastifyInstance, { routes, invoker, headers }: GatewayOptions): void {
  const router = new Router<GatewayRoute>();
  for (const route of routes) router.add(route.httpMethod, route.template, route);

  const handle = async (req: FastifyRequest, reply: FastifyReply) => {
    const url = req.url;
    const q = url.indexOf("?");
    const path = q === -1 ? url : url.slice(0, q);
    const match = router.match(req.method, path);
    switch (match.kind) {
      case "not-found":
        return sendHttpError(reply, new GrpcError(Code.NOT_FOUND, "Not Found"));
      case "bad-path":
        return sendHttpError(reply, new GrpcError(Code.INVALID_ARGUMENT, match.reason));
      case "method-not-allowed":
        reply.code(405).header("allow", match.allow.join(", ")).type("application/json");
        return reply.send(JSON.stringify({ code: Code.UNIMPLEMENTED, message: "Method Not Allowed", details: [] }));
    }
    const { route, segments } = match;
    let request: Message;
    try {
      request = decodeRequest(route, segments, q === -1 ? "" : url.slice(q + 1), req.body as string | undefined);
    } catch (err) {
      return sendHttpError(reply, asGrpcError(err) ?? new GrpcError(Code.INVALID_ARGUMENT, (err as Error).message));
    }
    const controller = new AbortController();
    // "close" also fires after a normal end; only an unfinished response means the client left.
    reply.raw.once("close", () => {
      if (!reply.raw.writableFinished) controller.abort();
    });
    const metadata = metadataFromHeaders(req.headers, headers);
    let call: GatewayCall;
    try {
      call = await invoker.invoke(route.method, request, { metadata, controller, httpPath: path });
    } catch (err) {
      return sendHttpError(reply, err, responseHeaders(err, headers.traceHeader));
    }
    const { result } = call;
    if ("message" in result) {
      reply.headers(headersFromMetadata(call.header, "grpc-metadata-", headers.traceHeader));
      return reply.type("application/json").send(responseJson(route, result.message));
    }
    return streamNdjson(route, call, result.stream, reply, headers.traceHeader);
  };

  app.route({ method: METHODS, url: "/*", handler: handle });
  app.route({ method: METHODS, url: "/", handler: handle });
}

/** Resolves when a slow client has drained the buffer, or has gone away. */
function writable(raw: FastifyReply["raw"]): Promise<void> {
  return new Promise((resolve) => {
    const done = () => {
      raw.off("drain", done);
      raw.off("close", done);
      resolve();
    };
    raw.once("drain", done);
    raw.once("close", done);
  });
}

/** Header metadata that came with an error (grpc-js clients attach it to the error). */
function responseHeaders(err: unknown, traceHeader: string): Record<string, string> {
  const md = asGrpcError(err)?.metadata;
  return md ? headersFromMetadata(md, "grpc-metadata-", traceHeader) : {};
}

/**
 * Server streaming as newline-delimited JSON, one `{"result":…}` line per message, written as
 * it comes. An error before the first message gets its own HTTP status; after that, the
 * status line is gone and the error becomes a final `{"error":…}` line.
 */
async function streamNdjson(
  route: GatewayRoute,
  call: GatewayCall,
  stream: AsyncIterable<Message>,
  reply: FastifyReply,
  traceHeader: string,
): Promise<void> {
  const output = route.method.info.desc.output;
  const raw = reply.raw;
  let started = false;
  const start = () => {
    reply.hijack();
    raw.writeHead(200, { ...headersFromMetadata(call.header, "grpc-metadata-", traceHeader), "content-type": "application/x-ndjson" });
    started = true;
  };
  try {
    for await (const message of stream) {
      if (!started) start();
      const json = route.responseBodyField ? responseJson(route, message) : toJsonString(output, message, JSON_WRITE);
      if (!raw.write(`{"result":${json}}\n`)) await writable(raw);
      if (raw.destroyed) return; // the client left; returning ends the handler's stream
    }
    if (!started) start();
    raw.end();
  } catch (err) {
    if (!started) {
      await sendHttpError(reply, err, headersFromMetadata(call.header, "grpc-metadata-", traceHeader));
      return;
    }
    if (!raw.destroyed) raw.end(`{"error":${httpError(err).body}}\n`);
  }
}
