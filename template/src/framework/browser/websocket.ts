import type { IncomingMessage } from "node:http";
import type { Duplex } from "node:stream";
import { fromJsonString, type Message, mergeFromBinary } from "@bufbuild/protobuf";
import type { Metadata } from "@grpc/grpc-js";
import type { FastifyInstance } from "fastify";
import type { Logger } from "pino";
import { type RawData, type WebSocket, WebSocketServer } from "ws";
import { CallContext, runInContext } from "../call/context.js";
import { parseGrpcTimeout, timerDelay } from "../call/deadline.js";
import { LazyAbortController } from "../call/lazy-abort.js";
import { emptyRequestOf } from "../call/method.js";
import { RequestStream } from "../call/request-stream.js";
import { ResponseStream } from "../call/response-stream.js";
import { Code, GrpcError, SHUTTING_DOWN } from "../call/status.js";
import { type MethodInfo, streamsRequests } from "../call/types.js";
import { binaryCodec } from "../codec/codec.js";
import { jsonTooDeep, TOO_DEEP } from "../codec/json-depth.js";
import { httpError } from "../errors/http.js";
import { jsonWriter } from "../gateway/json-writer.js";
import { type HeaderPolicy, metadataFromHeaders } from "../gateway/metadata.js";
import { decodeRequest } from "../gateway/request.js";
import { Router } from "../gateway/router.js";
import type { GatewayRoute } from "../gateway/routes.js";
import { MESSAGES_HELD, type PartialMessageBudget } from "../overload/partial-messages.js";
import { acceptUpgrades, refuseUpgrade } from "../server/http-server.js";
import type { BoundMethod } from "../server/methods.js";
import type { CorsPolicy } from "./cors.js";
import { Keepalive, type Watched } from "./keepalive.js";
import { HeldMessageBytes } from "./websocket-held.js";

/**
 * The WebSocket subprotocol of a call, which a client offers (and the server selects) beside any
 * credential entries: `new WebSocket(url, ["grpc-json-stream.v1", "bearer." + base64url(token)])`.
 */
export const WS_PROTOCOL = "grpc-json-stream.v1";
/** Credential entries of Sec-WebSocket-Protocol: a browser cannot set headers on a WebSocket. */
const BEARER = "bearer.";
const API_KEY = "api-key.";
/** A deadline entry (`grpc-timeout.30S`): the browser's way to send what other clients send as the grpc-timeout header. */
const TIMEOUT = "grpc-timeout.";
/** A call must get its first request message this soon after the upgrade, else it ends DEADLINE_EXCEEDED. */
const FIRST_MESSAGE_MS = 30_000;
/** Above this many unsent bytes, a stream waits for the socket before producing the next message. */
const HIGH_WATER_BYTES = 64 * 1024;
const JSON_READ = { ignoreUnknownFields: true } as const;
const END_FRAME = '{"end":{}}';
/** A client-streaming or bidi call pauses the socket with this many requests unread, and resumes at the low mark. */
const QUEUE_HIGH = 32;
const QUEUE_LOW = 8;
const CANCELLED = new GrpcError(Code.CANCELLED, "the client closed the WebSocket");
/** How shutdown closes the sockets of the calls still open (they end with SHUTTING_DOWN, UNAVAILABLE). */
const GOING_AWAY = 1001;
/** How a call refused for the partial-message budget closes (RFC 6455 §7.4, IANA's registry). */
const TRY_AGAIN_LATER = 1013;
const LOST = new GrpcError(Code.CANCELLED, "the client stopped answering WebSocket pings");

export interface WebSocketOptions {
  methods: readonly BoundMethod[];
  /** The gateway routes: a streaming method is also reachable at its google.api.http path. */
  routes: readonly GatewayRoute[];
  cors: CorsPolicy;
  headers: HeaderPolicy;
  /** Largest frame (GRPC_MAX_RECV_MSG_SIZE); a larger one closes the socket with 1009. */
  maxMessageBytes: number;
  /** MAX_PARTIAL_MESSAGE_BYTES: what messages in progress may hold, with every other transport's. */
  partialMessages?: PartialMessageBudget;
  log: Logger;
}

/** What an upgrade asks for: a method, and for a google.api.http path the fields its URL sets. */
interface Target {
  method: BoundMethod;
  /** Path variables and query parameters, merged over every request message (the URL wins). */
  fromUrl: Uint8Array | undefined;
}

/**
 * Streaming calls over WebSocket on the HTTP port, the one way a browser streams in both directions
 * over HTTP/1.1: `GET` with `Upgrade: websocket` at `/<package.Service>/<Method>` or at the method's
 * google.api.http path. Framing (JSON text frames, documented in docs/browsers.md):
 *  - client → server: each text frame is one request message in proto3 JSON; an empty text frame
 *    half-closes (no more requests);
 *  - server → client: `{"result":…}` per response message, then one final frame, `{"end":{}}` (OK) or
 *    `{"error":{"code","message","details"}}`, then a normal close (1000).
 * An `Origin` the CORS settings do not allow (other than the server's own) is refused with 403: a
 * page on another site cannot open a call with the user's cookies (cross-site WebSocket hijacking).
 * Credentials travel in Sec-WebSocket-Protocol entries, never in the URL (which lands in access logs).
 */
export function registerWebSockets(app: FastifyInstance, options: WebSocketOptions): void {
  const byPath = new Map<string, BoundMethod>();
  for (const m of options.methods) {
    if (m.info.kind === "unary") continue;
    byPath.set(m.info.path, m);
    jsonWriter(m.info.desc.output); // compiled now, not on the first call
  }
  const router = new Router<GatewayRoute>();
  const taken = new Set<string>();
  for (const route of options.routes) {
    if (route.method.info.kind === "unary" || taken.has(route.template.source)) continue;
    taken.add(route.template.source);
    router.add("GET", route.template, urlOnly(route));
  }
  if (byPath.size === 0) return;
  const wss = new WebSocketServer({
    noServer: true,
    maxPayload: options.maxMessageBytes,
    perMessageDeflate: false, // no compression: no inflate bombs, no per-message CPU
    clientTracking: false,
    handleProtocols: (offered) => (offered.has(WS_PROTOCOL) ? WS_PROTOCOL : false),
  });
  const server: ServerSide = { log: options.log, keepalive: new Keepalive(), open: new Set() };
  const budget = options.partialMessages;
  app.addHook("onClose", async () => server.keepalive.stop());
  // The HTTP server waits for every socket before it closes: the calls still open end now, with
  // UNAVAILABLE and a going-away close, and the close then waits for their close handshakes (within
  // the shutdown budget). Unlike an SSE stream, which is left to run to its end, a WebSocket call is
  // usually open-ended (a chat), and its client has a status and a close code to act on.
  app.addHook("preClose", async () => {
    const closed = [...server.open].map((call) => call.goingAway());
    await Promise.all(closed);
  });
  /** A WebSocket upgrade to a path with a streaming method; any other upgrade is served as a plain request. */
  const accepts = (req: IncomingMessage): boolean => {
    if (req.headers.upgrade?.toLowerCase() !== "websocket") return false;
    const url = req.url ?? "/";
    const q = url.indexOf("?");
    const path = q === -1 ? url : url.slice(0, q);
    return byPath.has(path) || router.match("GET", path).kind !== "not-found";
  };
  acceptUpgrades(app, accepts, (req, socket, head) => {
    const target = resolve(req.url ?? "/", byPath, router, socket);
    if (!target) return;
    if (!originAllowed(req, options.cors))
      return refuseUpgrade(socket, 403, Code.PERMISSION_DENIED, "origin not allowed: add it to CORS_ALLOWED_ORIGINS");
    const metadata = metadataFromHeaders(req.headers, options.headers);
    const offer = readOffer(req.headers["sec-websocket-protocol"], metadata);
    if (typeof offer === "string") return refuseUpgrade(socket, 400, Code.INVALID_ARGUMENT, offer);
    let timeoutMs: number | undefined;
    try {
      timeoutMs = parseGrpcTimeout(req.headers["grpc-timeout"]);
    } catch (err) {
      return refuseUpgrade(socket, 400, Code.INVALID_ARGUMENT, (err as Error).message);
    }
    if (offer.timeoutMs !== undefined) timeoutMs = Math.min(offer.timeoutMs, timeoutMs ?? Number.POSITIVE_INFINITY);
    // Like any deadline, it covers the whole call from here; the chain's timeout step enforces it.
    const deadline = timeoutMs === undefined ? Number.POSITIVE_INFINITY : Date.now() + timeoutMs;
    wss.handleUpgrade(req, socket, head, (ws) => {
      const path = (req.url ?? "/").split("?", 1)[0]!;
      const call = new StreamCall(ws, target, metadata, path, deadline, server);
      if (budget?.enabled) call.held = HeldMessageBytes.watch(ws, socket, budget, () => call.refuse()) ?? uncounted(options.log);
      call.start();
    });
  });
}

let warnedUncounted = false;

/** This version of ws hides what a message in progress holds: WebSocket messages go uncounted, said once. */
function uncounted(log: Logger): undefined {
  if (!warnedUncounted) log.warn("ws internals changed: WebSocket messages in progress are not counted against MAX_PARTIAL_MESSAGE_BYTES");
  warnedUncounted = true;
  return undefined;
}

/** A copy of the route that reads only its URL: path variables, and the query for every other field. */
function urlOnly(route: GatewayRoute): GatewayRoute {
  const boundPaths = new Set(route.pathFields.map((p) => p.fields.map((f) => f.name).join(".")));
  return { ...route, body: "", bodyField: undefined, rawRequest: false, boundPaths };
}

function resolve(url: string, byPath: Map<string, BoundMethod>, router: Router<GatewayRoute>, socket: Duplex): Target | undefined {
  const q = url.indexOf("?");
  const path = q === -1 ? url : url.slice(0, q);
  const method = byPath.get(path);
  if (method) return { method, fromUrl: undefined };
  const match = router.match("GET", path);
  if (match.kind !== "found") {
    refuseUpgrade(socket, 404, Code.NOT_FOUND, "no streaming method is served at this path");
    return undefined;
  }
  const route = match.route;
  try {
    const message = decodeRequest(route, match.segments, q === -1 ? "" : url.slice(q + 1), undefined);
    return { method: route.method, fromUrl: binaryCodec(route.method.info.desc.input).encode(message) };
  } catch (err) {
    refuseUpgrade(socket, 400, Code.INVALID_ARGUMENT, (err as Error).message);
    return undefined;
  }
}

/** No Origin (not a browser), the server's own origin, or one the CORS settings allow. */
function originAllowed(req: IncomingMessage, cors: CorsPolicy): boolean {
  const origin = req.headers.origin;
  if (origin === undefined) return true;
  const host = req.headers.host;
  if (host !== undefined && (origin === `http://${host}` || origin === `https://${host}`)) return true;
  return cors.allows(origin, host);
}

/**
 * The Sec-WebSocket-Protocol entries beside the subprotocol: `bearer.<base64url token>` → authorization,
 * `api-key.<base64url key>` → x-api-key, `grpc-timeout.<value>` → the call's timeout. A problem, or the timeout.
 */
function readOffer(header: string | undefined, metadata: Metadata): string | { timeoutMs: number | undefined } {
  let timeoutMs: number | undefined;
  if (header === undefined) return { timeoutMs };
  const offered = header.split(",").map((p) => p.trim());
  if (!offered.includes(WS_PROTOCOL)) return `offer the WebSocket subprotocol ${WS_PROTOCOL}`;
  for (const entry of offered) {
    if (entry.startsWith(TIMEOUT)) {
      try {
        timeoutMs = parseGrpcTimeout(entry.slice(TIMEOUT.length));
      } catch {
        return "a grpc-timeout entry must be 1-8 digits and a unit of H, M, S, m, u or n (grpc-timeout.30S)";
      }
      continue;
    }
    const [prefix, key] = entry.startsWith(BEARER) ? [BEARER, "authorization"] : entry.startsWith(API_KEY) ? [API_KEY, "x-api-key"] : [];
    if (!prefix || !key) continue;
    const value = Buffer.from(entry.slice(prefix.length), "base64url").toString("utf8");
    if (!/^[\x21-\x7e]+$/.test(value)) return `a ${prefix.slice(0, -1)} entry must hold base64url of printable ASCII`;
    // add, not set: a credential given twice (two entries, or an entry and a header) is refused by auth as repeated
    metadata.add(key, key === "authorization" ? `Bearer ${value}` : value);
  }
  return { timeoutMs };
}

/**
 * The request messages of a client-streaming or bidi call as frames arrive: queued until the handler
 * reads them, the socket paused while too many wait (flow control), ended by the half-close frame.
 */
class FrameQueue implements AsyncIterator<Message> {
  readonly #ws: WebSocket;
  readonly #queue: Message[] = [];
  #waiting: { resolve: (step: IteratorResult<Message>) => void; reject: (err: unknown) => void } | undefined;
  #ended = false;
  #error: unknown;
  #paused = false;

  constructor(ws: WebSocket) {
    this.#ws = ws;
  }

  push(message: Message): void {
    if (this.#ended) return;
    if (this.#waiting) {
      this.#take().resolve({ done: false, value: message });
      return;
    }
    this.#queue.push(message);
    if (this.#queue.length >= QUEUE_HIGH && !this.#paused) {
      this.#paused = true;
      this.#ws.pause();
    }
  }

  /** The half-close (`error` undefined) or a failure: the stream ends once the queued messages are read. */
  end(error?: unknown): void {
    if (this.#ended) return;
    this.#ended = true;
    this.#error = error;
    if (this.#waiting && this.#queue.length === 0) {
      const waiting = this.#take();
      if (error === undefined) waiting.resolve({ done: true, value: undefined });
      else waiting.reject(error);
    }
  }

  next(): Promise<IteratorResult<Message>> {
    const message = this.#queue.shift();
    if (message !== undefined) {
      if (this.#paused && this.#queue.length <= QUEUE_LOW) {
        this.#paused = false;
        this.#ws.resume();
      }
      return Promise.resolve({ done: false, value: message });
    }
    if (this.#ended) return this.#error === undefined ? Promise.resolve({ done: true, value: undefined }) : Promise.reject(this.#error);
    return new Promise((resolve, reject) => {
      this.#waiting = { resolve, reject };
    });
  }

  /** The handler stopped reading: whatever else arrives is discarded. */
  return(): Promise<IteratorResult<Message>> {
    this.end();
    this.#queue.length = 0;
    if (this.#paused) this.#ws.resume();
    return Promise.resolve({ done: true, value: undefined });
  }

  #take() {
    const waiting = this.#waiting!;
    this.#waiting = undefined;
    return waiting;
  }
}

/**
 * A call's abort controller that also ends its request messages with the abort's reason: whatever
 * aborts the call (its deadline, an interceptor, the handler, the client leaving), a handler waiting
 * for the next request wakes with the reason instead of waiting on.
 */
class CallController extends LazyAbortController {
  readonly #onAbort: (reason: unknown) => void;

  constructor(onAbort: (reason: unknown) => void) {
    super();
    this.#onAbort = onAbort;
  }

  override abort(reason?: unknown): void {
    if (this.aborted) return;
    super.abort(reason);
    this.#onAbort(reason);
  }
}

/** What the calls of one HTTP server share. */
interface ServerSide {
  readonly log: Logger;
  readonly keepalive: Keepalive;
  /** The calls whose socket is open. */
  readonly open: Set<StreamCall>;
}

/** One call over one WebSocket. */
class StreamCall implements Watched {
  readonly ws: WebSocket;
  readonly #target: Target;
  readonly #info: MethodInfo;
  readonly #ctx: CallContext;
  readonly #controller = new CallController((reason) => this.#requests?.end(reason));
  readonly #server: ServerSide;
  /** The response stream of a streaming method, once the chain returned it. */
  #stream: ResponseStream | undefined;
  /** Why the socket closed, as the handler's abort reason: the client closed it, or it stopped answering. */
  #closeReason = CANCELLED;
  /** Client-streaming and bidi calls: the requests as they arrive. */
  readonly #requests: FrameQueue | undefined;
  #started = false;
  #ended = false;
  #timer: NodeJS.Timeout | undefined;
  /** What the socket holds of a message in progress, against MAX_PARTIAL_MESSAGE_BYTES (when counted). */
  held: HeldMessageBytes | undefined;

  constructor(ws: WebSocket, target: Target, metadata: Metadata, path: string, deadline: number, server: ServerSide) {
    this.ws = ws;
    this.#server = server;
    this.#target = target;
    this.#info = target.method.info;
    this.#ctx = new CallContext({
      method: this.#info,
      transport: "http",
      metadata,
      controller: this.#controller,
      deadline,
      httpPath: path,
    });
    this.#ctx.fields.protocol = "websocket";
    this.#requests = streamsRequests(this.#info.kind) ? new FrameQueue(ws) : undefined;
  }

  start(): void {
    const ws = this.ws;
    ws.on("message", (data, isBinary) => this.#onFrame(data, isBinary));
    this.#server.open.add(this);
    ws.on("close", () => {
      this.held?.release();
      this.#server.open.delete(this);
      this.#server.keepalive.unwatch(this);
      clearTimeout(this.#timer);
      this.#requests?.end(this.#closeReason);
      this.#ended = true;
      this.#controller.abort(this.#closeReason);
    });
    this.#server.keepalive.watch(this);
    ws.on("error", (err) => this.#server.log.debug({ err, path: this.#info.path }, "websocket error"));
    if (this.#requests) {
      // The call starts at once; its handler reads the requests as they come.
      this.#started = true;
      void this.#run(emptyRequestOf(this.#info), new RequestStream(this.#requests));
      return;
    }
    // The call's own deadline, if sooner, also bounds the wait for its request.
    const wait = Math.min(FIRST_MESSAGE_MS, timerDelay(this.#ctx.deadline));
    const reason = wait < FIRST_MESSAGE_MS ? "deadline exceeded" : `no request message within ${FIRST_MESSAGE_MS / 1000} s`;
    this.#timer = setTimeout(() => this.#finish(new GrpcError(Code.DEADLINE_EXCEEDED, reason)), wait);
  }

  /** The server is shutting down: the call ends UNAVAILABLE, and the socket closes going away. */
  goingAway(): Promise<unknown> {
    const closed = new Promise((resolve) => this.ws.once("close", resolve));
    this.#finish(SHUTTING_DOWN, GOING_AWAY);
    return closed;
  }

  /** Messages in progress hold MAX_PARTIAL_MESSAGE_BYTES: the call ends RESOURCE_EXHAUSTED, the socket closes "try again later". */
  refuse(): void {
    this.#finish(new GrpcError(Code.RESOURCE_EXHAUSTED, MESSAGES_HELD), TRY_AGAIN_LATER);
  }

  /** The keepalive found the socket gone: drop the connection; the close ends the call CANCELLED. */
  lost(): void {
    this.#closeReason = LOST;
    this.ws.terminate();
  }

  #onFrame(data: RawData, isBinary: boolean): void {
    if (this.#ended) return;
    const request = this.#request(data, isBinary);
    const queue = this.#requests;
    if (queue) {
      if (request === undefined) queue.end();
      else if (request instanceof GrpcError) queue.end(request); // the call fails with it
      else queue.push(request);
    } else if (request instanceof GrpcError) this.#finish(request);
    else if (request !== undefined) {
      this.#started = true;
      clearTimeout(this.#timer);
      void this.#run(request, undefined);
    }
  }

  /** The frame as a request message, an error that ends the call, or undefined (the half-close). */
  #request(data: RawData, isBinary: boolean): Message | GrpcError | undefined {
    if (isBinary) return new GrpcError(Code.INVALID_ARGUMENT, "send request messages as JSON text frames");
    const text = data.toString();
    if (!this.#requests) {
      // A server-streaming call has its one request: only the half-close may follow.
      if (this.#started)
        return text === "" ? undefined : new GrpcError(Code.INVALID_ARGUMENT, `${this.#info.name} takes one request message`);
      if (text === "") return new GrpcError(Code.INVALID_ARGUMENT, "half-closed before sending the request message");
    } else if (text === "") return undefined;
    try {
      return this.#decode(text);
    } catch (err) {
      return err instanceof GrpcError ? err : new GrpcError(Code.INVALID_ARGUMENT, `malformed request message: ${(err as Error).message}`);
    }
  }

  #decode(text: string): Message {
    const input = this.#info.desc.input;
    if (jsonTooDeep(text)) throw new GrpcError(Code.INVALID_ARGUMENT, `malformed request message: ${TOO_DEEP}`);
    const message = fromJsonString(input, text, JSON_READ);
    // protobuf-es's merge, not the compiled codec: a decode that falls back half-way would have changed the message.
    if (this.#target.fromUrl) mergeFromBinary(input, message, this.#target.fromUrl);
    return message;
  }

  /** Enters the chain once, then sends each response message as it comes, waiting for a slow socket. */
  async #run(request: Message, requests: RequestStream | undefined): Promise<void> {
    const ctx = this.#ctx;
    const ws = this.ws;
    const write = jsonWriter(this.#info.desc.output); // compiled at start-up: this is a WeakMap lookup
    let it: AsyncIterator<Message> | undefined;
    try {
      const result = await runInContext(ctx, () => this.#target.method.invoke({ method: this.#info, ctx, request, requests }));
      if ("message" in result) {
        if (!this.#ended) ws.send(`{"result":${write(result.message)}}`);
      } else {
        this.#stream = ResponseStream.of(result.stream);
        it = this.#stream;
        for (;;) {
          const step = await runInContext(ctx, () => it!.next());
          if (step.done) break;
          if (this.#ended) return; // the client left
          const frame = `{"result":${write(step.value)}}`;
          if (ws.bufferedAmount < HIGH_WATER_BYTES) ws.send(frame);
          else await new Promise<void>((resolve) => ws.send(frame, () => resolve()));
        }
        it = undefined;
      }
      this.#finish(undefined);
    } catch (err) {
      it = undefined;
      this.#finish(err);
    } finally {
      // Left early: end the handler's stream too.
      if (it) runInContext(ctx, () => it!.return?.())?.catch(() => {});
    }
  }

  /** The final frame (OK end or error), then the close (normal, unless the server is going away). */
  #finish(err: unknown, closeCode = 1000): void {
    if (this.#ended) return;
    this.#ended = true;
    clearTimeout(this.#timer);
    if (err !== undefined) {
      // Stops a handler still running: its signal aborts, and a read of its requests fails with the error
      // (a clean end of input would have it take the messages so far for all of them).
      this.#controller.abort(err);
      // A response stream still running ends with it too, so its metrics and log line say what the client got.
      this.#stream?.fail(err);
    }
    this.#requests?.return(); // whatever else arrives is discarded
    const frame = err === undefined ? END_FRAME : `{"error":${httpError(err).body}}`;
    this.ws.send(frame, () => this.ws.close(closeCode));
  }
}
