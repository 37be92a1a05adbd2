import { isUtf8 } from "node:buffer";
import { createServer, type IncomingMessage, type Server, type ServerResponse, STATUS_CODES } from "node:http";
import type { Http2ServerRequest } from "node:http2";
import type { Socket } from "node:net";
import type { Duplex } from "node:stream";
import compress from "@fastify/compress";
import Fastify, {
  type FastifyError,
  type FastifyInstance,
  type FastifyReply,
  type onRequestHookHandler,
  type onSendHookHandler,
  type RouteOptions,
} from "fastify";
import { Code, GrpcError, OVERLOADED_MESSAGE } from "../call/status.js";
import type { Config } from "../config/schema.js";
import { httpError, sendHttpError } from "../errors/http.js";
import { statusJson } from "../errors/wire.js";
import { type CallKind, type OverloadGuard, RETRY_AFTER_SECONDS } from "../overload/guard.js";
import type { PartialMessageBudget } from "../overload/partial-messages.js";
import { type OnConnectionRefused, reportRefusedConnections } from "./connection-refusals.js";
import { closeHttp2Side, type Http2Side, type HttpTlsFiles, serveBothVersions } from "./http-versions.js";
import { liftHttp2RequestTimeout } from "./http2-timeouts.js";
import { bodyParser, type ParseBody } from "./request-body.js";
import { joinRepeatedAuthorization } from "./request-headers.js";
import { discardRest } from "./unread-body.js";

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
 * Limits of the HTTP servers (gateway, health, admin), against slow or oversized clients. The body
 * limit is GRPC_MAX_RECV_MSG_SIZE. Documented in docs/configuration.md's "Limits" table.
 */
export const HTTP_LIMITS = {
  /** No idle timeout on an open request: SSE and NDJSON streams may be quiet for long (SSE sends a heartbeat). */
  connectionTimeoutMs: 0,
  /** Request line plus headers, in bytes; more is 431. */
  maxHeaderSize: 16_384,
  /** Longest `:param` value of a fastify route a service adds (the gateway matches its paths itself). */
  maxParamLength: 500,
} as const;

/** A request Node's parser rejected before fastify saw it (bad request line or header, too large, too slow): a JSON error, then close. */
function onClientError(err: NodeJS.ErrnoException, socket: Socket): void {
  if (err.code === "ECONNRESET" || socket.destroyed) return;
  if (err.code === "ERR_HTTP_REQUEST_TIMEOUT" && streamingRequests.get(socket)?.complete === false) return; // a streamed body: see liftRequestTimeout
  const [status, code, message] =
    err.code === "HPE_HEADER_OVERFLOW"
      ? [431, Code.INVALID_ARGUMENT, "request headers too large"]
      : err.code === "ERR_HTTP_REQUEST_TIMEOUT"
        ? [408, Code.DEADLINE_EXCEEDED, "request not received in time"]
        : [400, Code.INVALID_ARGUMENT, "malformed HTTP request"];
  answerOnSocket(socket, status, code, message);
}

/** A JSON error written straight to a socket fastify never answers, then close. `extraHeaders`: whole header lines. */
function answerOnSocket(socket: Duplex, status: number, code: Code, message: string, extraHeaders = ""): void {
  const body = statusJson(code, message, []);
  if (socket.writable) {
    socket.write(
      `HTTP/1.1 ${status} ${STATUS_CODES[status]}\r\nContent-Type: application/json\r\nContent-Length: ${Buffer.byteLength(body)}\r\n${extraHeaders}Connection: close\r\n\r\n${body}`,
    );
  }
  socket.destroy();
}

/** Servers whose close has begun (their fastify's preClose ran). */
const closingServers = new WeakSet<Server>();

/**
 * A request that still arrives once closing began (on a keep-alive connection busy when it began): 503
 * UNAVAILABLE in our JSON shape, and Connection: close so the client retries on another connection (another
 * pod). fastify's return503OnClosing would answer the same with a body of its own.
 */
function refuseWhileClosing(req: IncomingMessage, res: ServerResponse): void {
  const body = statusJson(Code.UNAVAILABLE, "server is shutting down", []);
  // HTTP/2 has no Connection header: its connections get a GOAWAY instead (closeHttp2Side).
  const headers =
    req.httpVersionMajor === 2
      ? { "content-type": "application/json", "content-length": Buffer.byteLength(body) }
      : { "content-type": "application/json", "content-length": Buffer.byteLength(body), connection: "close" };
  res.writeHead(503, headers).end(body);
}

/** A request whose `Expect` is not `100-continue` (the only expectation HTTP/1.1 defines): 417, then close (its body is unread). */
function refuseExpectation(_req: IncomingMessage, res: ServerResponse): void {
  const body = statusJson(Code.FAILED_PRECONDITION, "unsupported Expect header: only 100-continue is supported", []);
  res.writeHead(417, { "content-type": "application/json", "content-length": Buffer.byteLength(body), connection: "close" }).end(body);
}

/** How the HTTP port speaks: HTTP/1.1 and HTTP/2 (cleartext, or TLS with ALPN). The admin port speaks HTTP/1.1 only. */
export interface HttpVersions {
  http2: boolean;
  tls?: HttpTlsFiles | undefined;
  /** Overload protection of the port (the HTTP port's; the admin port has none). */
  overload?: HttpOverload | undefined;
  /** Which port this is, for the warning and the count of connections refused at HTTP_MAX_CONNECTIONS ("http" if left out). */
  port?: "http" | "admin";
  /** Told of each connection refused at HTTP_MAX_CONNECTIONS: the metrics count it. */
  onConnectionRefused?: OnConnectionRefused | undefined;
  /** MAX_PARTIAL_MESSAGE_BYTES, which request bodies not yet whole count against (the HTTP port's; none on the admin port). */
  partialMessages?: PartialMessageBudget | undefined;
}

/** Overload protection of the HTTP port (overload/guard.ts). */
export interface HttpOverload {
  guard: OverloadGuard;
  /** The CORS headers of an allowed browser origin, so a refused cross-origin call can read its status. */
  corsHeaders?: (req: IncomingMessage) => Record<string, string> | undefined;
}

/** Paths never refused when overloaded: probes, metrics and profiles (to see why it is overloaded). */
const EXEMPT_PATHS = /^\/(?:healthcheck|readycheck|metrics)(?:[?#]|$)|^\/debug\/pprof(?:[/?#]|$)/;

/**
 * What overload protection makes of a request over the limit (asked only then): the exempt paths; an event
 * stream (SSE: `Accept: text/event-stream`) is a long-lived stream, as a WebSocket is; anything else a call.
 */
function callKind(req: IncomingMessage): CallKind {
  if (EXEMPT_PATHS.test(req.url ?? "/")) return "exempt";
  return req.headers.accept?.includes("text/event-stream") ? "stream" : "call";
}

/**
 * A call refused because the process is overloaded, before its body is read, in its protocol's form: gRPC-Web
 * as a trailers-only UNAVAILABLE (HTTP 200, as gRPC-Web clients expect), Connect as 503 with its JSON error,
 * anything else (REST, SSE, NDJSON) as 503 with ours; all with `Retry-After`. The connection stays open: Node
 * discards the unread body.
 */
function refuseOverloaded(req: IncomingMessage, res: ServerResponse, overload: HttpOverload): void {
  const headers: Record<string, string | number> = { "retry-after": RETRY_AFTER_SECONDS, ...overload.corsHeaders?.(req) };
  const type = req.headers["content-type"] ?? "";
  if (type.startsWith("application/grpc-web")) {
    const semicolon = type.indexOf(";");
    headers["content-type"] = semicolon === -1 ? type : type.slice(0, semicolon);
    headers["grpc-status"] = Code.UNAVAILABLE;
    headers["grpc-message"] = OVERLOADED_MESSAGE;
    headers["content-length"] = 0;
    res.writeHead(200, headers).end();
    return;
  }
  const connect = type.startsWith("application/connect+") || req.headers["connect-protocol-version"] !== undefined;
  const body = connect
    ? JSON.stringify({ code: "unavailable", message: OVERLOADED_MESSAGE })
    : statusJson(Code.UNAVAILABLE, OVERLOADED_MESSAGE, []);
  headers["content-type"] = "application/json";
  headers["content-length"] = Buffer.byteLength(body);
  res.writeHead(503, headers).end(body);
}

/**
 * The server under fastify, with the limits above: Node's HTTP/1.1 server, and with `versions.http2` an HTTP/2
 * server beside it on the same listener (http-versions.ts), both calling fastify's handler. An HTTP/1.1
 * request without Host is a JSON 400 here (Node's own check answers with no body). With overload protection,
 * a request counts in flight from here until its response closes, and is refused before fastify runs when
 * the process is overloaded.
 */
/**
 * The time limits of an HTTP server, from HTTP_HEADERS_TIMEOUT_SECONDS, HTTP_REQUEST_TIMEOUT_SECONDS and
 * HTTP_KEEP_ALIVE_TIMEOUT_SECONDS.
 */
export interface HttpTimeouts {
  /** Request line and headers must arrive within this, else 408. */
  headersMs: number;
  /** Whole request (headers and body) must arrive within this, else 408: slow-loris uploads. Responses (streams) are not limited. */
  requestMs: number;
  /** An idle keep-alive connection is closed after this. */
  keepAliveMs: number;
  /** Connections open at once (HTTP_MAX_CONNECTIONS): Node closes more at once; 0 for no cap. */
  maxConnections: number;
}

export function httpTimeouts(config: Config): HttpTimeouts {
  return {
    headersMs: config.HTTP_HEADERS_TIMEOUT_SECONDS * 1000,
    requestMs: config.HTTP_REQUEST_TIMEOUT_SECONDS * 1000,
    keepAliveMs: config.HTTP_KEEP_ALIVE_TIMEOUT_SECONDS * 1000,
    maxConnections: config.HTTP_MAX_CONNECTIONS,
  };
}

function createLimitedServer(
  handler: (req: IncomingMessage, res: ServerResponse) => void,
  versions: HttpVersions,
  timeouts: HttpTimeouts,
): Server {
  const overload = versions.overload;
  const guard = overload?.guard;
  const serve = (req: IncomingMessage, res: ServerResponse): void => {
    if (closingServers.has(server)) {
      refuseWhileClosing(req, res);
      return;
    }
    // Here rather than in a second "request" listener: an emitter with two listeners copies its list on every emit.
    requestless.delete(req.socket);
    joinRepeatedAuthorization(req.headers, req.rawHeaders);
    if (req.headers.host === undefined && req.httpVersion === "1.1") {
      const body = statusJson(Code.INVALID_ARGUMENT, "missing Host header", []);
      res.writeHead(400, { "content-type": "application/json", "content-length": Buffer.byteLength(body), connection: "close" }).end(body);
      return;
    }
    if (guard !== undefined) {
      if (++guard.inFlight > guard.limit && guard.refuse(callKind(req))) {
        refuseOverloaded(req, res, overload!);
        return;
      }
      res.on("close", guard.release);
    }
    handler(req, res);
  };
  const server: Server = createServer(
    {
      headersTimeout: timeouts.headersMs,
      requestTimeout: Math.max(timeouts.requestMs, timeouts.headersMs),
      // Node checks both timeouts only at this interval (30 s by default, so the 10 s header timeout acted
      // at up to 40 s): a tenth of the header timeout, at most 1 s. The check walks the requests still
      // arriving, in C++, and does nothing more unless one is late.
      connectionsCheckingInterval: Math.min(1000, Math.max(10, timeouts.headersMs / 10)),
      maxHeaderSize: HTTP_LIMITS.maxHeaderSize,
      requireHostHeader: false,
      // Only an upgrade someone takes is one (see acceptUpgrades): Node would hand every request carrying
      // `Upgrade` to the upgrade listener, so `Upgrade: h2c` (curl --http2, Java's HttpClient) got a 404.
      shouldUpgradeCallback: (req) => upgradeFilters.get(server)?.(req) ?? false,
    },
    serve,
  );
  // Connections that have not sent a whole request yet: see closeRequestlessConnectionsOnClose.
  const requestless = new Set<Socket>();
  requestlessSockets.set(server, requestless);
  const track = (socket: Socket): void => {
    if (closingServers.has(server)) {
      socket.destroy();
      return;
    }
    requestless.add(socket);
    socket.once("close", () => requestless.delete(socket));
  };
  overloads.set(server, guard);
  if (versions.http2) http2Sides.set(server, serveBothVersions(server, serve, { tls: versions.tls, http1: track, timeouts }));
  else server.on("connection", track);
  // Node answers an Expect other than 100-continue with a bare 417 unless someone listens; ours has the JSON body.
  server.on("checkExpectation", refuseExpectation);
  server.keepAliveTimeout = timeouts.keepAliveMs;
  // Idle connections end at the header and keep-alive timeouts; the cap bounds how many a client can hold till then.
  if (timeouts.maxConnections > 0) {
    server.maxConnections = timeouts.maxConnections;
    reportRefusedConnections(server, {
      port: versions.port ?? "http",
      setting: "HTTP_MAX_CONNECTIONS",
      max: timeouts.maxConnections,
      onRefused: versions.onConnectionRefused,
    });
  }
  server.setTimeout(HTTP_LIMITS.connectionTimeoutMs);
  return server;
}

/** Each HTTP server's overload protection, for its upgrades. */
const overloads = new WeakMap<Server, OverloadGuard | undefined>();

/** Per connection, the request on it whose body streams for a whole call (see liftRequestTimeout). */
const streamingRequests = new WeakMap<Duplex, IncomingMessage>();

/**
 * Exempts a request whose body streams for the whole call (client-streaming and bidi routes) from the
 * whole-request timeout: Node would otherwise end it with a 408 (or, once the response has begun, abort it
 * mid-way) when HTTP_REQUEST_TIMEOUT_SECONDS has passed since its headers. Node has no option per request;
 * its timeout reaches onClientError, which leaves such a request alone (Node has then taken it off the list
 * it checks, so it is not reported again). Over HTTP/2 the timeout is the framework's own (http2-timeouts.ts),
 * told through the request's stream. The call's deadline, the stream's idle limit and shutdown end it.
 */
export function liftRequestTimeout(req: IncomingMessage): void {
  if (req.httpVersionMajor === 2) liftHttp2RequestTimeout(req as unknown as Http2ServerRequest);
  else streamingRequests.set(req.socket, req);
}

/** The HTTP/2 side of each HTTP port's server (SINGLE_PORT reroutes its connections). */
const http2Sides = new WeakMap<Server, Http2Side>();

/** Per server, how its content-type parsers read bodies (see bodyParserFor). */
const bodyReaders = new WeakMap<Server, (parse: ParseBody) => ReturnType<typeof bodyParser>>();

/** A content-type parser for `app` that reads bodies within its limit and byte budget (server/request-body.ts). */
export function bodyParserFor(app: FastifyInstance, parse: ParseBody): ReturnType<typeof bodyParser> {
  const reader = bodyReaders.get(app.server);
  if (reader === undefined) throw new Error("bodyParserFor: not a server made by createHttpServer");
  return reader(parse);
}

/** The HTTP/2 side of a server made with `http2: true`. */
export function http2SideOf(app: FastifyInstance): Http2Side | undefined {
  return http2Sides.get(app.server);
}

/**
 * Closes, when the server closes, every connection that has not sent a whole request yet: a client's
 * spare keep-alive socket, a health checker's pre-opened one, a stalled upload of headers. Node's
 * closeIdleConnections() leaves these open and its header-timeout sweep stops at close, so one such socket
 * would hold the close, and the shutdown, until the budget runs out. A request not yet received is not in
 * flight: nothing accepted is lost. HTTP/2 connections get a GOAWAY: their open streams finish, new ones go
 * elsewhere.
 */
function closeRequestlessConnectionsOnClose(app: FastifyInstance): void {
  // A request takes its socket off the list in createLimitedServer's handler.
  // preClose runs right before fastify closes the listener.
  app.addHook("preClose", (done) => {
    const requestless = requestlessSockets.get(app.server);
    for (const socket of requestless ?? []) socket.destroy();
    requestless?.clear();
    const side = http2Sides.get(app.server);
    if (side) closeHttp2Side(side);
    done();
  });
}

const requestlessSockets = new WeakMap<Server, Set<Socket>>();

/** Answers an upgrade request that is not taken: a JSON error, then close. */
export const refuseUpgrade = answerOnSocket;

/** Per server, which requests carrying `Upgrade` are upgrades (given to acceptUpgrades). */
const upgradeFilters = new WeakMap<Server, (req: IncomingMessage) => boolean>();

/**
 * Hands the `Upgrade` requests `accepts` takes (WebSocket, at the paths it serves) to `handler`. Any
 * other request carrying `Upgrade` (h2c, an unknown protocol, a WebSocket to a path served otherwise:
 * the probes) is served as a plain HTTP/1.1 request, the header ignored (RFC 9110 §7.8 lets a server
 * do so). Node emits upgrades apart from requests: the socket counts as in flight from here (shutdown
 * no longer closes it as idle), and once closing began new upgrades are refused with 503 like requests.
 * With overload protection, the upgrade is one call in flight until its socket closes, and is refused with
 * 503 and Retry-After when the process is overloaded.
 */
export function acceptUpgrades(
  app: FastifyInstance,
  accepts: (req: IncomingMessage) => boolean,
  handler: (req: IncomingMessage, socket: Duplex, head: Buffer) => void,
): void {
  const server = app.server;
  const guard = overloads.get(server);
  upgradeFilters.set(server, accepts);
  server.on("upgrade", (req: IncomingMessage, socket: Duplex, head: Buffer) => {
    requestlessSockets.get(server)?.delete(req.socket);
    if (closingServers.has(server)) return refuseUpgrade(socket, 503, Code.UNAVAILABLE, "server is shutting down");
    if (guard !== undefined) {
      if (++guard.inFlight > guard.limit && guard.refuse("stream")) {
        return answerOnSocket(socket, 503, Code.UNAVAILABLE, OVERLOADED_MESSAGE, `Retry-After: ${RETRY_AFTER_SECONDS}\r\n`);
      }
      socket.once("close", guard.release);
    }
    handler(req, socket, head);
  });
}

/**
 * The body type the HTTP server accepts (decoded as UTF-8 JSON text); any other is a 415 INVALID_ARGUMENT,
 * text/plain included: it is one of the types a cross-site form or fetch may send without a CORS
 * preflight, so taking it as JSON would let any page post JSON to the API.
 */
export const JSON_BODY_TYPES = ["application/json"];

/** A text body: JSON is UTF-8 (RFC 8259), so invalid bytes are a 400, not U+FFFD smuggled into a string field. */
export function utf8Text(body: Buffer): string | GrpcError {
  return isUtf8(body) ? body.toString("utf8") : new GrpcError(Code.INVALID_ARGUMENT, "request body is not valid UTF-8");
}

/** Compressed content types: JSON, text (not event streams), JavaScript, XML and SVG. */
const COMPRESSIBLE = /^text\/(?!event-stream)|[+/]json(?:;|$)|^application\/(?:javascript|xml)|[+/]xml(?:;|$)/;

/** Bodies smaller than this (in bytes) are sent uncompressed. */
const COMPRESSION_THRESHOLD = 1024;

/** A string or bytes body surely under the threshold (a UTF-16 unit is at most 3 UTF-8 bytes). */
function belowCompressionThreshold(payload: unknown): boolean {
  if (typeof payload === "string") {
    return payload.length * 3 < COMPRESSION_THRESHOLD || Buffer.byteLength(payload) < COMPRESSION_THRESHOLD;
  }
  return payload instanceof Uint8Array && payload.byteLength < COMPRESSION_THRESHOLD;
}

declare module "fastify" {
  interface RouteShorthandOptions {
    /**
     * `false` for a route whose handler never calls `reply.compress()`: the compression plugin's
     * onRequest hook, which only sets that method on each reply, is then left out (one hook fewer per
     * request). Compression of the route's replies is unchanged.
     */
    replyCompress?: boolean;
  }
}

/**
 * The compression plugin gives each route an onRequest hook (setting `reply.compress`) and an onSend
 * hook that negotiates Accept-Encoding and compresses. Its onSend is wrapped here so that a body under
 * the threshold, which it never compresses (most API responses), goes on at once, without its header
 * reads and negotiation; other bodies take the plugin's onSend as before (a non-text type opted out
 * through the plugin's own `x-no-compression` switch). One route hook instead of a root hook plus the
 * plugin's (measured: fewer hooks a request). The plugin's hooks are the last of each list, as
 * it pushes them there; checked by name, so that a plugin version that adds them otherwise fails at
 * start-up instead of compressing wrongly.
 */
function foldCompressionHooks(route: RouteOptions): void {
  if (route.compress === false) return; // the plugin added nothing
  const { onSend, onRequest } = route;
  const pluginOnSend = Array.isArray(onSend) ? (onSend.at(-1) as onSendHookHandler | undefined) : undefined;
  const pluginOnRequest = Array.isArray(onRequest) ? (onRequest.at(-1) as onRequestHookHandler | undefined) : undefined;
  if (!Array.isArray(onSend) || !Array.isArray(onRequest) || pluginOnSend?.name !== "onSend" || pluginOnRequest?.name !== "onRequest") {
    throw new Error("@fastify/compress no longer adds its route hooks as expected: review foldCompressionHooks");
  }
  onSend[onSend.length - 1] = function compressLarge(req, reply, payload, done) {
    if (belowCompressionThreshold(payload)) return done(null, payload);
    const type = reply.getHeader("content-type");
    if (typeof type !== "string" || !COMPRESSIBLE.test(type)) req.headers["x-no-compression"] = "1";
    return pluginOnSend.call(this, req, reply, payload, done);
  };
  if (route.replyCompress === false) onRequest.pop();
}

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
export async function createHttpServer(config: Config, versions: HttpVersions = { http2: false }): Promise<FastifyInstance> {
  const app = Fastify({
    logger: false,
    bodyLimit: config.GRPC_MAX_RECV_MSG_SIZE,
    serverFactory: (handler) => createLimitedServer(handler, versions, httpTimeouts(config)),
    routerOptions: { maxParamLength: HTTP_LIMITS.maxParamLength },
    clientErrorHandler: onClientError,
    return503OnClosing: false, // refuseWhileClosing answers instead, in our JSON shape
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
    // compressible, so other types opt out through the plugin's own switch. Brotli at quality 4 (11 is
    // far too slow per request).
    await app.register(compress, {
      global: true,
      threshold: COMPRESSION_THRESHOLD,
      encodings: ["br", "gzip"],
      customTypes: COMPRESSIBLE,
      globalDecompression: false,
    });
    // After the plugin's own onRoute hook, which has just given the route its hooks.
    app.addHook("onRoute", foldCompressionHooks);
  }
  app.removeContentTypeParser(["application/json", "text/plain"]); // fastify's defaults
  bodyReaders.set(app.server, (parse) => bodyParser(config.GRPC_MAX_RECV_MSG_SIZE, versions.partialMessages, parse));
  app.addContentTypeParser(
    JSON_BODY_TYPES,
    bodyParserFor(app, (_req, body) => utf8Text(body)),
  );
  app.setErrorHandler((err: FastifyError, req, reply) => {
    // Refused before its body was read (413, 415, 429): the rest is not wanted.
    if (!req.raw.readableEnded && !req.raw.destroyed) discardRest(req.raw, reply.raw);
    if (err instanceof GrpcError) return sendHttpError(reply, err);
    if (err.code === "FST_ERR_CTP_INVALID_MEDIA_TYPE") {
      const type = req.headers["content-type"];
      const message =
        type === undefined ? "missing Content-Type: send application/json" : `unsupported content type "${type}": send application/json`;
      return reply
        .code(415)
        .type("application/json")
        .send(statusJson(Code.INVALID_ARGUMENT, message, []));
    }
    // fastify's own status stays (413, 415…); the body says the same in gRPC terms.
    return sendFastifyError(err, reply);
  });
  app.setNotFoundHandler((_req, reply) => sendHttpError(reply, new GrpcError(Code.NOT_FOUND, "Not Found")));
  app.addHook("preClose", (done) => {
    closingServers.add(app.server);
    done();
  });
  closeRequestlessConnectionsOnClose(app);
  return app;
}
