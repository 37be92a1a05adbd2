import type { OutgoingHttpHeaders, ServerResponse } from "node:http";
import { type Message, toJson } from "@bufbuild/protobuf";
import { Metadata } from "@grpc/grpc-js";
import type { FastifyInstance, FastifyReply, FastifyRequest, HTTPMethods, RouteOptions } from "fastify";
import { deadlineIn, parseGrpcTimeout } from "../call/deadline.js";
import { drained } from "../call/drained.js";
import { LazyAbortController } from "../call/lazy-abort.js";
import { emptyRequestOf } from "../call/method.js";
import { asGrpcError, Code, GrpcError } from "../call/status.js";
import { httpError, sendHttpError, UnsupportedMediaTypeError } from "../errors/http.js";
import type { PartialMessageBudget } from "../overload/partial-messages.js";
import type { OnRejectedBeforeHandler } from "../server/grpc-rejections.js";
import { liftRequestTimeout } from "../server/http-server.js";
import { discardRest } from "../server/unread-body.js";
import { abortRawStream, acceptRawBodies, type RawBody, rawResponseData, rawResponseType, sendRawResponse } from "./http-body.js";
import type { GatewayCall, Invoker } from "./invoker.js";
import { jsonReader } from "./json-reader.js";
import { jsonMessages } from "./json-stream.js";
import { jsonWriter } from "./json-writer.js";
import type { Marshalers, StreamMarshaler } from "./marshalers.js";
import {
  type HeaderPolicy,
  headersFromMetadata,
  METADATA_PREFIX,
  metadataFromHeaders,
  responseHeaders,
  TRAILER_PREFIX,
} from "./metadata.js";
import { decodeRequest, streamMessageDecoder } from "./request.js";
import { type MatchResult, Router } from "./router.js";
import type { GatewayRoute } from "./routes.js";

export interface GatewayOptions {
  routes: readonly GatewayRoute[];
  invoker: Invoker;
  headers: HeaderPolicy;
  /** Stream framing by `Accept` (NDJSON, SSE, registered ones); frozen here. */
  marshalers: Marshalers;
  /** Interval of a marshaler's heartbeat (SSE `: ping`), in ms; 0 for none. */
  heartbeatMs: number;
  /** HTTP_STREAM_IDLE_TIMEOUT_SECONDS in ms: a streamed request body's call ends once its connection is idle this long; 0 for never. */
  streamIdleMs: number;
  /** The largest message of a streamed request body (GRPC_MAX_RECV_MSG_SIZE). */
  maxMessageBytes: number;
  /** MAX_PARTIAL_MESSAGE_BYTES: a streamed body's message not yet whole counts against it. */
  partialMessages?: PartialMessageBudget | undefined;
  /**
   * Told of a call refused before it reached its method's chain (a request that cannot be decoded, a content type
   * the route does not take), with the code its client got, so the metrics count it as over gRPC.
   */
  onRejected?: OnRejectedBeforeHandler | undefined;
  /** Told of each gateway request (metrics); `req.gatewayRoute` tells the route matched. */
  observer?: RequestObserver;
}

/** Told when each gateway request arrives (before its body is read) and when its response closes. */
export interface RequestObserver {
  arrived(res: ServerResponse): void;
  /** Once per request: the response finished (`res.writableFinished`), or the client left first. */
  closed(req: FastifyRequest, res: ServerResponse): void;
}

declare module "fastify" {
  interface FastifyRequest {
    /** The google.api.http binding the gateway matched; unset for unknown paths and methods. */
    gatewayRoute: GatewayRoute | undefined;
    /** @internal The route match made before the body was read (only when some route streams requests). */
    gatewayMatch: MatchResult<GatewayRoute> | undefined;
  }
}

const JSON_WRITE = { alwaysEmitImplicit: true } as const;
const JSON_UTF8 = "application/json; charset=utf-8";
const METHODS = ["GET", "HEAD", "POST", "PUT", "DELETE", "PATCH", "OPTIONS"];
const METHOD_NOT_ALLOWED = JSON.stringify({ code: Code.UNIMPLEMENTED, message: "Method Not Allowed", details: [] });
const TE_TRAILERS = /(?:^|,)\s*trailers\s*(?:[;,]|$)/i;
/**
 * What the gateway keeps on a response, so that one listener function shared by all responses can
 * report its close to the observer and abort its call: no closure per request, and one listener
 * rather than one per concern (an emitter with two listeners copies its listener array on each emit).
 */
const CONTROLLER = Symbol("gateway call controller");
const REQUEST = Symbol("gateway request");
type GatewayResponse = ServerResponse & { [CONTROLLER]?: LazyAbortController; [REQUEST]?: FastifyRequest };

/** For an error before any call was made: no metadata to send back. */
const NO_CALL: GatewayCall = { header: new Metadata(), trailer: new Metadata(), result: { error: undefined } };

/** Serialises a response message, or just its `response_body` field, as canonical proto3 JSON. */
function responseJson(route: GatewayRoute, message: Message): string {
  const field = route.responseBodyField;
  if (!field) return jsonWriter(route.method.info.desc.output)(message);
  if (field.fieldKind === "message") {
    const value = (message as unknown as Record<string, Message | undefined>)[field.localName];
    return value ? jsonWriter(field.message)(value) : "null";
  }
  const json = toJson(route.method.info.desc.output, message, JSON_WRITE) as Record<string, unknown>;
  return JSON.stringify(json[field.jsonName] ?? null);
}

/**
 * The REST/JSON gateway: one catch-all fastify route that matches the compiled
 * google.api.http templates, decodes the request, invokes the method and writes JSON
 * (or a stream, framed by the marshaler the `Accept` header picks). Returns the HTTP methods served at
 * a path, for CORS preflight answers.
 */
export function registerGateway(app: FastifyInstance, options: GatewayOptions): (path: string) => string[] {
  const {
    routes,
    invoker,
    headers: policy,
    marshalers,
    heartbeatMs,
    streamIdleMs,
    maxMessageBytes,
    partialMessages,
    observer,
    onRejected,
  } = options;
  const { traceHeader } = policy;
  marshalers.freeze();
  if (!app.hasRequestDecorator("gatewayRoute")) app.decorateRequest("gatewayRoute", undefined);
  const router = new Router<GatewayRoute>();
  const methods = new Set(METHODS);
  for (const route of routes) {
    router.add(route.httpMethod, route.template, route);
    // The response's JSON writer, compiled now rather than by the first request.
    const body = route.responseBodyField;
    if (!body) jsonWriter(route.method.info.desc.output);
    else if (body.fieldKind === "message") jsonWriter(body.message);
    if (route.body === "*") jsonReader(route.method.info.desc.input); // the request's, likewise
    // custom: {kind: "SEARCH"} and the like; routes.ts already checked Node can parse it.
    if (!methods.has(route.httpMethod)) {
      if (!app.supportedMethods.includes(route.httpMethod)) app.addHttpMethod(route.httpMethod, { hasBody: true });
      methods.add(route.httpMethod);
    }
  }
  if (routes.some((r) => r.rawRequest)) acceptRawBodies(app, (req) => rawRoute(router, req));

  /**
   * "close" fires once, also after a normal end: only a response not ended and flushed means the client left.
   * (Both: over HTTP/2 a stream the client reset closes its response as flushed, though nothing ended it.)
   */
  function onResponseClose(this: GatewayResponse): void {
    if (observer) observer.closed(this[REQUEST]!, this);
    if (!(this.writableEnded && this.writableFinished)) this[CONTROLLER]?.abort();
  }

  /** The call's abort controller, aborted when the HTTP client goes away. */
  const callController = (reply: FastifyReply): LazyAbortController => {
    const controller = new LazyAbortController();
    const raw = reply.raw as GatewayResponse;
    raw[CONTROLLER] = controller;
    if (!observer) raw.on("close", onResponseClose); // with an observer, onRequest has added it
    if (raw.destroyed) controller.abort(); // gone while the body was read
    return controller;
  };

  // The handler resolves to nothing, never to the reply: a reply is a thenable, and a promise resolved
  // with one takes an extra job (and, unless the reply is already sent, an end-of-stream listener).
  const handle = async (req: FastifyRequest, reply: FastifyReply): Promise<void> => {
    const url = req.url;
    const q = url.indexOf("?");
    const path = q === -1 ? url : url.slice(0, q);
    const match = req.gatewayMatch ?? router.match(req.method, path);
    switch (match.kind) {
      case "not-found":
        sendHttpError(reply, new GrpcError(Code.NOT_FOUND, "Not Found"));
        return;
      case "bad-path":
        sendHttpError(reply, new GrpcError(Code.INVALID_ARGUMENT, match.reason));
        return;
      case "method-not-allowed":
        reply.code(405).header("allow", match.allow.join(", ")).type("application/json").send(METHOD_NOT_ALLOWED);
        return;
    }
    const { route, segments } = match;
    req.gatewayRoute = route;
    let request: Message;
    let deadline: number;
    try {
      deadline = deadlineIn(parseGrpcTimeout(req.headers["grpc-timeout"]));
      request = decodeRequest(route, segments, q === -1 ? "" : url.slice(q + 1), req.body as string | RawBody | undefined);
    } catch (err) {
      const status = asGrpcError(err) ?? new GrpcError(Code.INVALID_ARGUMENT, (err as Error).message);
      onRejected?.(route.method.info.path, status.code);
      sendHttpError(reply, status);
      return;
    }
    const controller = callController(reply);
    const metadata = metadataFromHeaders(req.headers, policy);
    const early = route.earlyHeader ? new EarlyHeader() : undefined;
    const call = await invoker.invoke(route.method, request, { metadata, controller, httpPath: path, deadline, onHeader: early?.send });
    const streaming = respond(req, reply, route, call, early);
    if (streaming instanceof Promise) await streaming; // a stream (or its error): the handler ends with it
  };

  /**
   * A client-streaming or bidi route, from the raw request before fastify reads the body: the body is a
   * stream of JSON messages, each decoded as the call reads it (so neither the whole-body limit nor
   * fastify's content-type parsers apply; each message keeps the receive size limit). The reply is
   * hijacked and written here. If the call ends before the body does (an early answer, an error), the
   * rest of the body is discarded, within bounds (discardRest).
   */
  const handleRequestStream = async (req: FastifyRequest, reply: FastifyReply, route: GatewayRoute, segments: string[]) => {
    reply.hijack();
    req.gatewayRoute = route;
    const url = req.url;
    const q = url.indexOf("?");
    const path = q === -1 ? url : url.slice(0, q);
    const body = req.raw;
    let requests: AsyncIterator<Message> | undefined;
    try {
      const refused = streamTypeRefusal(req.headers["content-type"]);
      if (refused) {
        onRejected?.(route.method.info.path, refused.code);
        await sendError(reply, refused, NO_CALL, false, traceHeader);
        return;
      }
      const deadline = deadlineIn(parseGrpcTimeout(req.headers["grpc-timeout"]));
      const decode = streamMessageDecoder(route, segments, q === -1 ? "" : url.slice(q + 1));
      // The body is a stream as long as the call: the whole-request timeout is for unary bodies. The
      // call's deadline, the idle limit and shutdown end it instead.
      liftRequestTimeout(body);
      requests = jsonMessages(body, maxMessageBytes, decode, streamIdleMs, partialMessages);
      const controller = callController(reply);
      const metadata = metadataFromHeaders(req.headers, policy);
      const early = route.earlyHeader ? new EarlyHeader() : undefined;
      const call = await invoker.invoke(route.method, emptyRequestOf(route.method.info), {
        metadata,
        controller,
        httpPath: path,
        deadline,
        requests,
        onHeader: early?.send,
      });
      await respond(req, reply, route, call, early);
    } catch (err) {
      // Before the call (a bad query, path value or Grpc-Timeout): invoke itself never throws.
      const status = asGrpcError(err) ?? new GrpcError(Code.INVALID_ARGUMENT, (err as Error).message);
      onRejected?.(route.method.info.path, status.code);
      await sendError(reply, status, NO_CALL, false, traceHeader);
    } finally {
      await requests?.return?.();
      if (!body.readableEnded && !body.destroyed) discardRest(body, reply.raw);
    }
  };

  /** Answers with what the call produced: one JSON message (or raw HttpBody), a stream, or the error. */
  const respond = (req: FastifyRequest, reply: FastifyReply, route: GatewayRoute, call: GatewayCall, early?: EarlyHeader) => {
    const te = headerText(req.headers.te);
    const trailers = te !== undefined && TE_TRAILERS.test(te);
    const { result } = call;
    if ("error" in result) return sendError(reply, result.error, call, trailers, traceHeader);
    if ("message" in result) {
      const header = call.ctx
        ? responseHeaders(call.ctx.responseHeaderEntries(), traceHeader)
        : headersFromMetadata(call.header, METADATA_PREFIX, traceHeader);
      if (reply.sent) return sendHijacked(reply, 200, header, route, result.message, trailers ? call.trailer : undefined, traceHeader);
      if (header) reply.headers(header);
      if (trailers) addTrailers(reply, call.trailer, traceHeader);
      if (route.rawResponse) return sendRawResponse(reply, route, result.message);
      // With the charset fastify would add to a JSON type: the same header, without rewriting it per reply.
      return reply.type(JSON_UTF8).send(responseJson(route, result.message));
    }
    const stream: StreamReply = {
      route,
      call,
      reply,
      marshaler: marshalers.select(headerText(req.headers.accept)),
      trailers,
      traceHeader,
      started: false,
    };
    early?.attach(stream);
    return writeStream(stream, result.stream, heartbeatMs);
  };

  // One onRequest hook, before fastify reads the body, and only if needed: it tells the observer, and
  // when some route streams requests it matches the route (the handler reuses the match) to take a
  // streamed body from the raw request. One hook costs less than one per concern (fastify's runner).
  const streams = routes.some((r) => r.requestStream);
  const onRequest: RouteOptions["onRequest"] =
    observer || streams
      ? (req, reply, done) => {
          if (observer) {
            const raw = reply.raw as GatewayResponse;
            observer.arrived(raw);
            raw[REQUEST] = req;
            raw.on("close", onResponseClose);
          }
          if (streams) {
            const q = req.url.indexOf("?");
            const match = router.match(req.method, q === -1 ? req.url : req.url.slice(0, q));
            if (match.kind === "found" && match.route.requestStream) {
              void handleRequestStream(req, reply, match.route, match.segments);
              return; // hijacked: fastify goes no further
            }
            req.gatewayMatch = match;
          }
          done();
        }
      : undefined;
  if (streams && !app.hasRequestDecorator("gatewayMatch")) app.decorateRequest("gatewayMatch", undefined);

  const allMethods = [...methods] as HTTPMethods[];
  // The gateway never calls reply.compress(): no compression hook per request for it.
  const routeOptions = onRequest ? { handler: handle, onRequest, replyCompress: false } : { handler: handle, replyCompress: false };
  app.route({ method: allMethods, url: "/*", ...routeOptions });
  app.route({ method: allMethods, url: "/", ...routeOptions });
  return (path) => router.methodsAt(path);
}

/** The media types a streamed request body may declare (parameters such as charset aside). */
const STREAM_BODY_TYPES = new Set(["application/x-ndjson", "application/json"]);

/**
 * A streamed request body must declare a JSON type, as a unary body must (http-server's parser answers
 * 415 there): a body sent as text/plain, a form or multipart, or with no type at all, is one a page on
 * any site may post without a CORS preflight, so taking it would let such a page reach the handler.
 * The 415 carries INVALID_ARGUMENT, as the unary one does.
 */
function streamTypeRefusal(type: string | undefined): GrpcError | undefined {
  if (type !== undefined) {
    const semi = type.indexOf(";");
    if (STREAM_BODY_TYPES.has((semi === -1 ? type : type.slice(0, semi)).trim().toLowerCase())) return undefined;
  }
  const message =
    type === undefined
      ? "missing Content-Type: send application/x-ndjson or application/json"
      : `unsupported content type "${type}": send application/x-ndjson or application/json`;
  return new UnsupportedMediaTypeError(message);
}

/** Whether a request goes to a route that takes a google.api.HttpBody (asked by the body parsers, before the handler). */
function rawRoute(router: Router<GatewayRoute>, req: FastifyRequest): boolean {
  const q = req.url.indexOf("?");
  const match = router.match(req.method, q === -1 ? req.url : req.url.slice(0, q));
  return match.kind === "found" && match.route.rawRequest;
}

function headerText(value: string | string[] | undefined): string | undefined {
  return typeof value === "string" || value === undefined ? value : value.join(",");
}

/**
 * A JSON error response with the code's HTTP status; header metadata as `Grpc-Metadata-*`, trailers
 * as `Grpc-Trailer-*` if asked for. gRPC errors go out trailers-only, so the trace ID may be in the
 * trailer: it is echoed either way.
 */
function sendError(reply: FastifyReply, err: unknown, call: GatewayCall, trailers: boolean, traceHeader: string): FastifyReply | undefined {
  const trace = call.header.get(traceHeader)[0] ?? call.trailer.get(traceHeader)[0];
  const header = headersFromMetadata(call.header, METADATA_PREFIX, traceHeader);
  if (reply.sent) {
    const e = httpError(err);
    const headers = { ...header, ...e.headers };
    if (typeof trace === "string") headers[traceHeader] = trace;
    writeHijacked(reply, e.status, headers, "application/json", e.body, trailers ? call.trailer : undefined, traceHeader);
    return;
  }
  if (trailers) addTrailers(reply, call.trailer, traceHeader);
  if (typeof trace === "string") reply.header(traceHeader, trace);
  return sendHttpError(reply, err, header);
}

/** One response message of a hijacked reply (a client-streaming route): as JSON, or raw for an HttpBody. */
function sendHijacked(
  reply: FastifyReply,
  status: number,
  header: OutgoingHttpHeaders | undefined,
  route: GatewayRoute,
  message: Message,
  trailer: Metadata | undefined,
  traceHeader: string,
): void {
  if (route.rawResponse) {
    writeHijacked(reply, status, header, rawResponseType(route, message), rawResponseData(route, message), trailer, traceHeader);
  } else {
    writeHijacked(reply, status, header, "application/json", responseJson(route, message), trailer, traceHeader);
  }
}

/**
 * A whole response on the raw Node response, for replies fastify no longer writes (hijacked): the
 * headers fastify's hooks set (CORS…), then ours. Not compressed. Trailers make it chunked.
 */
function writeHijacked(
  reply: FastifyReply,
  status: number,
  headers: OutgoingHttpHeaders | undefined,
  type: string,
  body: string | Buffer,
  trailer: Metadata | undefined,
  traceHeader: string,
): void {
  const raw = reply.raw;
  if (raw.headersSent || raw.destroyed) return;
  const head: OutgoingHttpHeaders = { ...(reply.getHeaders() as OutgoingHttpHeaders), ...headers, "content-type": type };
  // Answered before the request body ended: the rest is not wanted, and the connection closes after this response.
  if (!reply.request.raw.readableEnded) head.connection = "close";
  const trailers = trailer && headersFromMetadata(trailer, TRAILER_PREFIX, traceHeader);
  if (trailers) head.trailer = Object.keys(trailers).join(", ");
  else head["content-length"] = Buffer.byteLength(body);
  raw.writeHead(status, head);
  if (trailers) raw.addTrailers(trailers);
  raw.end(body);
}

/** Trailer metadata as HTTP trailers `Grpc-Trailer-<key>` (chunked encoding; fastify declares them in `Trailer`). */
function addTrailers(reply: FastifyReply, trailer: Metadata, traceHeader: string): void {
  const headers = headersFromMetadata(trailer, TRAILER_PREFIX, traceHeader);
  if (!headers) return;
  for (const name in headers) {
    const value = headers[name]!;
    const text = typeof value === "string" ? value : value.join(", ");
    reply.trailer(name, (_reply, _payload, done) => done(null, text));
  }
}

/** One streamed response in progress. */
interface StreamReply {
  readonly route: GatewayRoute;
  readonly call: GatewayCall;
  readonly reply: FastifyReply;
  readonly marshaler: StreamMarshaler;
  readonly trailers: boolean;
  readonly traceHeader: string;
  /** Whether the status line and headers are out (after the first message or heartbeat). */
  started: boolean;
}

/**
 * Sends the 200 and the headers: fastify's (set by hooks), the call's header metadata (complete by
 * the first message: a stream handler only runs once pulled), then the marshaler's.
 */
function start(s: StreamReply, own: Readonly<Record<string, string>> = s.marshaler.headers): void {
  s.reply.hijack();
  const header = headersFromMetadata(s.call.header, METADATA_PREFIX, s.traceHeader);
  s.reply.raw.writeHead(200, { ...(s.reply.getHeaders() as OutgoingHttpHeaders), ...header, ...own });
  s.started = true;
}

/**
 * The HTTP status line and headers of a stream, sent as soon as the call sends its header when that
 * comes before the first message (a handler calling `ctx.sendHeader()`), which may be before the
 * gateway has the stream to write to.
 */
class EarlyHeader {
  #stream: StreamReply | undefined;
  #pending = false;

  readonly send = (): void => {
    if (!this.#stream) this.#pending = true;
    else EarlyHeader.#flush(this.#stream);
  };

  attach(stream: StreamReply): void {
    this.#stream = stream;
    if (this.#pending) EarlyHeader.#flush(stream);
  }

  /** writeHead only buffers the headers until the first write: these must go now. */
  static #flush(s: StreamReply): void {
    if (s.started || s.reply.raw.destroyed) return;
    start(s);
    s.reply.raw.flushHeaders();
  }
}

function heartbeat(s: StreamReply): void {
  if (!s.started) start(s);
  if (!s.reply.raw.destroyed) s.reply.raw.write(s.marshaler.heartbeat!);
}

/**
 * A server stream, one marshaled frame per message written (and so flushed) as it comes; never
 * compressed. An error before anything was sent gets its own HTTP status and a JSON error body, like
 * a unary call; after that the status line is gone and the error becomes the marshaler's last frame.
 * A google.api.HttpBody stream is written unframed: each message's bytes, the first one's Content-Type,
 * and an error after the headers aborts the response (no terminating chunk) rather than append JSON.
 */
async function writeStream(s: StreamReply, stream: AsyncIterable<Message>, heartbeatMs: number): Promise<void> {
  const { route, marshaler } = s;
  const info = route.method.info;
  const raw = s.reply.raw;
  const rawBody = route.rawResponse;
  const timer = !rawBody && marshaler.heartbeat !== undefined && heartbeatMs > 0 ? setInterval(heartbeat, heartbeatMs, s) : undefined;
  try {
    let index = 0;
    for await (const message of stream) {
      if (rawBody) {
        if (!s.started) start(s, { "content-type": rawResponseType(route, message) });
        if (!raw.write(rawResponseData(route, message))) await drained(raw, "close");
      } else {
        if (!s.started) start(s);
        if (!raw.write(marshaler.message(responseJson(route, message), index++, info))) await drained(raw, "close");
      }
      if (raw.destroyed) return; // the client left; returning ends the handler's stream
    }
    if (!s.started) start(s);
    if (!rawBody && marshaler.end !== undefined) raw.write(marshaler.end);
    finish(s);
  } catch (err) {
    if (!s.started) {
      await sendError(s.reply, err, s.call, s.trailers, s.traceHeader);
      return;
    }
    if (rawBody) abortRawStream(raw);
    else if (!raw.destroyed) {
      raw.write(marshaler.error(httpError(err).body, info));
      finish(s);
    }
  } finally {
    clearInterval(timer);
  }
}

function finish(s: StreamReply): void {
  if (s.trailers) {
    const trailers = headersFromMetadata(s.call.trailer, TRAILER_PREFIX, s.traceHeader);
    if (trailers) s.reply.raw.addTrailers(trailers);
  }
  s.reply.raw.end();
}
