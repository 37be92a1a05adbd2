import type { IncomingHttpHeaders } from "node:http";
import type { Http2ServerRequest } from "node:http2";
import type { Message } from "@bufbuild/protobuf";
import {
  Code as ConnectCode,
  ConnectError,
  createConnectRouter,
  createContextKey,
  createContextValues,
  type HandlerContext,
} from "@connectrpc/connect";
import {
  compressionBrotli,
  compressionGzip,
  universalRequestFromNodeRequest,
  universalResponseToNodeResponse,
} from "@connectrpc/connect-node";
import type { UniversalHandler, UniversalServerRequest, UniversalServerResponse } from "@connectrpc/connect/protocol";
import type { FastifyInstance, FastifyReply, FastifyRequest } from "fastify";
import type { Logger } from "pino";
import { CallContext, runInContext } from "../call/context.js";
import { grpcTimeoutWithinTimer, MAX_TIMER_MS } from "../call/deadline.js";
import { type CancelSource, LazyAbortController } from "../call/lazy-abort.js";
import { emptyRequestOf } from "../call/method.js";
import { RequestStream } from "../call/request-stream.js";
import { Code, GrpcError } from "../call/status.js";
import { type Call, type MethodInfo, streamsRequests, streamsResponses } from "../call/types.js";
import { jsonTooDeep, TOO_DEEP } from "../codec/json-depth.js";
import { jsonWriter } from "../gateway/json-writer.js";
import type { PartialMessageBudget } from "../overload/partial-messages.js";
import type { OnRejectedBeforeHandler } from "../server/grpc-rejections.js";
import { endedByCancel } from "../server/half-close.js";
import { liftRequestTimeout } from "../server/http-server.js";
import type { BoundMethod } from "../server/methods.js";
import { resetWhenAnswered } from "../server/unread-body.js";
import { connectError, copyMetadata, metadataOf } from "./connect-bridge.js";
import { countRefusal } from "./connect-refusals.js";
import { refuseUndecodableGet, serveConnectUnary } from "./connect-unary.js";
import { decodeTextRequest, encodeTextResponse, isGrpcWebText } from "./grpc-web-text.js";
import { serveGrpcWebUnary } from "./grpc-web-unary.js";
import { GuardedBody } from "./guarded-body.js";

export interface BrowserProtocolOptions {
  methods: readonly BoundMethod[];
  /** Largest request message (GRPC_MAX_RECV_MSG_SIZE) and response message (GRPC_MAX_SEND_MSG_SIZE). */
  readMaxBytes: number;
  writeMaxBytes: number;
  log: Logger;
  /** Told of a call refused before it reached its method's chain (a request that cannot be decoded), with its code. */
  onRejected?: OnRejectedBeforeHandler | undefined;
  /** MAX_PARTIAL_MESSAGE_BYTES: the process's budget of bytes in unfinished request messages (streamed bodies count against it). */
  partialMessages?: PartialMessageBudget | undefined;
  /** HTTP_STREAM_IDLE_TIMEOUT_SECONDS in ms: a client-streaming or bidi call over HTTP/2 with nothing sent either way this long ends; 0 for never. */
  streamIdleMs?: number | undefined;
}

/** One request Connect's handler serves: its raw headers, and whether our implementation ran for it. */
class ConnectRequest {
  /** Our implementation ran: the chain counts the call. Otherwise Connect answered alone (connect-refusals.ts). */
  entered = false;
  constructor(
    readonly headers: IncomingHttpHeaders,
    /** The request over HTTP/2: its stream and session tell a cancel from a half-close. */
    readonly http2?: Http2ServerRequest,
  ) {}
}

const REQUEST = createContextKey<ConnectRequest>(new ConnectRequest({}), { description: "the HTTP request" });

/**
 * Connect aborts its signal on every end of the call, a normal one included: only an abort before
 * the answer is a cancellation (the client left, or Connect-Timeout-Ms / grpc-timeout passed).
 */
class ProtocolCancellation implements CancelSource {
  answered = false;
  readonly #signal: AbortSignal;

  constructor(signal: AbortSignal) {
    this.#signal = signal;
  }

  get cancelled(): boolean {
    return !this.answered && this.#signal.aborted;
  }

  get reason(): unknown {
    return fromConnectError(this.#signal.reason);
  }

  onCancel(listener: () => void): void {
    this.#signal.addEventListener("abort", () => this.answered || listener(), { once: true });
  }
}

/**
 * Over HTTP/2, the end of a request stream is taken as the client's half-close only once a PING sent after it
 * has been answered: a Node client cancels with END_STREAM and then RST_STREAM, which can arrive apart (the gRPC
 * port does the same: half-close.ts). A reset (or the connection's loss) seen by then rejects with CANCELLED and
 * aborts the call.
 */
function halfClosed(req: Http2ServerRequest, ctx: CallContext): Promise<void> {
  return endedByCancel(req.stream).then((cancelled) => {
    if (!cancelled && !req.aborted) return;
    const error = new GrpcError(Code.CANCELLED, "call cancelled");
    ctx.abort(error);
    throw error;
  });
}

/**
 * The status a request stream's error ends the call with over HTTP/2. A stream that ended inside an envelope is
 * malformed only if the end was a half-close: a cancel's END_STREAM cuts the message short too.
 */
function streamError(err: unknown, req: Http2ServerRequest, ctx: CallContext): unknown {
  const status = fromConnectError(err);
  if (!(status instanceof GrpcError) || status.code !== Code.INVALID_ARGUMENT || !req.readableEnded) return status;
  return halfClosed(req, ctx).then(
    () => status,
    (cancelled: unknown) => cancelled,
  );
}

/** Connect's error as the call's status; any other error as it is. */
function fromConnectError(err: unknown): unknown {
  if (!(err instanceof ConnectError)) return err;
  // connect-node's word for a client that hung up (its request stream reset or destroyed): a cancel.
  if (err.code === ConnectCode.Aborted) return new GrpcError(Code.CANCELLED, "the client went away");
  return new GrpcError(err.code as number, err.rawMessage);
}

/** One call's context, from Connect's: metadata from the headers, the deadline from the protocol's timeout. */
function contextFor(info: MethodInfo, hctx: HandlerContext, cancellation: ProtocolCancellation, path: string): CallContext {
  const timeout = hctx.timeoutMs();
  const ctx = new CallContext({
    method: info,
    transport: "http",
    metadata: metadataOf(hctx.values.get(REQUEST).headers),
    controller: new LazyAbortController(cancellation),
    deadline: timeout === undefined ? Number.POSITIVE_INFINITY : Date.now() + timeout,
    httpPath: path,
  });
  ctx.fields.protocol = hctx.protocolName;
  return ctx;
}

/**
 * The implementation Connect calls for one method: one entry into the method's chain per call. Client-streaming
 * and bidi calls (HTTP/2, or client-streaming over HTTP/1.1) get Connect's request stream as `call.requests`.
 */
function implementation(method: BoundMethod, path: string) {
  const { info, invoke } = method;
  const manyRequests = streamsRequests(info.kind);
  const enter = (input: Message | AsyncIterable<Message>, hctx: HandlerContext) => {
    hctx.values.get(REQUEST).entered = true;
    const cancellation = new ProtocolCancellation(hctx.signal);
    const ctx = contextFor(info, hctx, cancellation, path);
    const h2 = manyRequests ? hctx.values.get(REQUEST).http2 : undefined;
    const call: Call = manyRequests
      ? {
          method: info,
          ctx,
          request: emptyRequestOf(info),
          requests: new RequestStream(
            (input as AsyncIterable<Message>)[Symbol.asyncIterator](),
            h2 && (() => halfClosed(h2, ctx)),
            h2 ? (err) => streamError(err, h2, ctx) : fromConnectError,
          ),
        }
      : { method: info, ctx, request: input as Message };
    return { ctx, cancellation, result: runInContext(ctx, () => invoke(call)) };
  };
  if (!streamsResponses(info.kind)) {
    return async (request: Message | AsyncIterable<Message>, hctx: HandlerContext): Promise<Message> => {
      const { ctx, cancellation, result } = enter(request, hctx);
      try {
        const answer = await result;
        if (!("message" in answer)) throw new Error(`${info.path}: a stream answered a unary method`);
        copyMetadata(ctx.responseHeader, hctx.responseHeader);
        copyMetadata(ctx.responseTrailer, hctx.responseTrailer);
        return answer.message;
      } catch (err) {
        throw connectError(err, ctx);
      } finally {
        cancellation.answered = true;
      }
    };
  }
  return async function* (request: Message | AsyncIterable<Message>, hctx: HandlerContext): AsyncGenerator<Message> {
    const { ctx, cancellation, result } = enter(request, hctx);
    let it: AsyncIterator<Message> | undefined;
    let headerSent = false;
    try {
      const answer = await result;
      if (!("stream" in answer)) throw new Error(`${info.path}: a single message answered a streaming method`);
      it = answer.stream[Symbol.asyncIterator]();
      for (;;) {
        // Each step runs in the call's context, so handler code keeps seeing it.
        const step = await runInContext(ctx, () => it!.next());
        if (step.done) break;
        if (!headerSent) {
          copyMetadata(ctx.responseHeader, hctx.responseHeader); // headers go out with the first message
          headerSent = true;
        }
        yield step.value;
      }
      it = undefined;
      if (!headerSent) copyMetadata(ctx.responseHeader, hctx.responseHeader);
      copyMetadata(ctx.responseTrailer, hctx.responseTrailer);
    } catch (err) {
      it = undefined;
      throw connectError(err, ctx);
    } finally {
      cancellation.answered = true;
      // Left early (the client went away): end the handler's stream too.
      if (it) runInContext(ctx, () => it!.return?.())?.catch(() => {});
    }
  };
}

const utf8 = new TextDecoder();

/**
 * Connect's JSON options. `textDecoder` is how its JSON serialization reads a message's bytes as text,
 * right before parsing them (createJsonSerialization takes it; the router's option type leaves it out,
 * hence no object literal there): text nested too deep is refused there, before JSON.parse builds it,
 * and Connect reports the error as invalid_argument. browser-protocols' deep-JSON test guards it.
 */
const JSON_OPTIONS = {
  ignoreUnknownFields: true,
  textDecoder: {
    decode(data: Uint8Array): string {
      const text = utf8.decode(data);
      if (jsonTooDeep(text)) throw new ConnectError(TOO_DEEP, ConnectCode.InvalidArgument);
      return text;
    },
  },
};

/**
 * Clamps a timeout header beyond what a timer holds: Connect would arm its deadline timer with it,
 * and Node fires an overflowing timer at once. A deadline that far away is no deadline in practice.
 */
function clampTimeouts(headers: IncomingHttpHeaders): void {
  const connect = headers["connect-timeout-ms"];
  if (typeof connect === "string" && connect.length >= 10 && Number(connect) > MAX_TIMER_MS) {
    headers["connect-timeout-ms"] = String(MAX_TIMER_MS);
  }
  const grpc = headers["grpc-timeout"];
  if (typeof grpc === "string") headers["grpc-timeout"] = grpcTimeoutWithinTimer(grpc); // 720H or 2147484S too
}

/**
 * gRPC-Web (binary, JSON and base64 text) and the Connect protocol (unary POST and, for NO_SIDE_EFFECTS
 * methods, GET; server streams) at `/<package.Service>/<Method>` on the HTTP port. The Connect
 * project's own protocol code does the wire work (framing, content negotiation, Connect's error JSON,
 * timeouts, compression, size limits); each of its calls enters our chain once, so auth, metrics,
 * logs and validation are the same as over gRPC and the gateway.
 *
 * Each procedure is a fastify route whose onRequest hook hands the raw request to Connect before
 * fastify reads the body: the global hooks (CORS) have run, and their headers are carried over.
 * Every method kind is served: client-streaming and bidi to clients that stream a request body (Node's
 * connect-node over HTTP/2; bidi needs HTTP/2, and Connect answers 505 over HTTP/1.1). Browsers cannot
 * stream a request body: they use the WebSocket route. Returns the HTTP methods served at a path, for CORS
 * preflights.
 */
export function registerBrowserProtocols(app: FastifyInstance, options: BrowserProtocolOptions): (path: string) => string[] {
  const router = createConnectRouter({
    grpc: false, // gRPC has its own port
    grpcWeb: true,
    connect: true,
    readMaxBytes: options.readMaxBytes,
    writeMaxBytes: options.writeMaxBytes,
    acceptCompression: [compressionGzip, compressionBrotli],
    jsonOptions: JSON_OPTIONS,
  });
  for (const method of options.methods) {
    router.rpc(method.info.desc as never, implementation(method, method.info.path) as never);
  }
  const unary = new Map(options.methods.filter((m) => m.info.kind === "unary").map((m) => [m.info.path, m]));
  const streamedBodies = new Set(options.methods.filter((m) => streamsRequests(m.info.kind)).map((m) => m.info.path));
  for (const m of unary.values()) jsonWriter(m.info.desc.output, false); // compiled now for the Connect JSON fast path
  const methodsByPath = new Map<string, string[]>();
  for (const handler of router.handlers) {
    methodsByPath.set(handler.requestPath, [...handler.allowedMethods].sort());
    app.route({
      method: handler.allowedMethods,
      url: handler.requestPath,
      exposeHeadRoute: false,
      onRequest: serve(handler, unary.get(handler.requestPath), streamedBodies.has(handler.requestPath), options),
      handler: () => {}, // never reached: the hook answers
    });
  }
  return (path) => methodsByPath.get(path) ?? [];
}

/**
 * The idle limit of a client-streaming or bidi call over HTTP/2, whose whole-request timeout is lifted: as for the
 * gateway's NDJSON streams (json-stream.ts), the HTTP/2 stream's own timer, which any frame either way restarts
 * (no timer per message). When it fires, the body's read fails with DEADLINE_EXCEEDED, as Connect's own deadline
 * does: Connect ends the call with that status (an end-stream message, or gRPC-Web trailers) and the chain counts
 * it. Over HTTP/1.1 the whole-request timeout still applies.
 */
function endWhenIdle(body: GuardedBody, raw: FastifyRequest["raw"], idleMs: number): void {
  raw.setTimeout(idleMs, () => {
    // Idle again after the answer (a client that never ends its request): the stream is closed (RST_STREAM NO_ERROR).
    if (body.aborted) (raw as unknown as Http2ServerRequest).stream.close();
    else
      body.abort(
        new GrpcError(
          Code.DEADLINE_EXCEEDED,
          `nothing was sent either way for ${idleMs / 1000} s (HTTP_STREAM_IDLE_TIMEOUT_SECONDS): send a message to keep the stream open`,
        ),
      );
  });
}

/** With the metrics off, refusals are not counted (countRefusal still words some answers, see binaryParseRefusal). */
const uncounted: OnRejectedBeforeHandler = () => {};

/**
 * The route's hook. `streamedBody`: a client-streaming or bidi method, whose request body lasts as long as the
 * call. Over HTTP/2 (where Connect serves bidi) the whole-request timeout is lifted, as for the gateway's NDJSON
 * streams: the call's deadline and shutdown end it. Over HTTP/1.1 it stays, as it was.
 */
function serve(
  handler: UniversalHandler,
  unary: BoundMethod | undefined,
  streamedBody: boolean,
  { readMaxBytes, log, onRejected, streamIdleMs = 0, partialMessages }: BrowserProtocolOptions,
) {
  return (req: FastifyRequest, reply: FastifyReply): void => {
    const http2 = req.raw.httpVersionMajor === 2;
    const lifted = streamedBody && http2;
    if (lifted) liftRequestTimeout(req.raw);
    reply.hijack();
    const res = reply.raw;
    const set = reply.getHeaders();
    for (const name in set) res.setHeader(name, set[name]!);
    if (
      unary &&
      (serveConnectUnary(unary, req.raw, res, readMaxBytes, log, onRejected, partialMessages) ||
        serveGrpcWebUnary(unary, req.raw, res, readMaxBytes, log, onRejected, partialMessages) ||
        refuseUndecodableGet(unary, req.raw, res, onRejected))
    )
      return;
    const headers = req.raw.headers;
    clampTimeouts(headers);
    const text = isGrpcWebText(headers["content-type"]);
    const raw2 = http2 ? (req.raw as unknown as Http2ServerRequest) : undefined;
    const request = new ConnectRequest(headers, raw2);
    let uReq: UniversalServerRequest;
    try {
      uReq = universalRequestFromNodeRequest(req.raw, res, undefined, createContextValues().set(REQUEST, request));
    } catch {
      res.writeHead(400).end(); // no authority: an HTTP/1.0 request without Host
      return;
    }
    if (text) uReq = decodeTextRequest(uReq);
    const idle = lifted && streamIdleMs > 0;
    // Enveloped bodies that Connect's handler buffers message by message: every streamed one, and gRPC-Web text
    // whatever the method (the unary fast paths count the others).
    const budget = (streamedBody || text) && partialMessages?.enabled === true ? partialMessages : undefined;
    if (idle || budget !== undefined) {
      const body = new GuardedBody(uReq.body as AsyncIterable<Uint8Array>, budget);
      if (idle) endWhenIdle(body, req.raw, streamIdleMs);
      uReq = { ...uReq, body };
    }
    // Answered before the request ended (refused, or the call ended first): the rest is not wanted. Over HTTP/1.1
    // Node reads and drops it; over HTTP/2 the stream would stay open, and Connect's response with it.
    if (raw2 !== undefined) resetWhenAnswered(raw2);
    const write = (uRes: UniversalServerResponse) => universalResponseToNodeResponse(text ? encodeTextResponse(uRes) : uRes, res);
    handler(uReq)
      // Connect answered alone, before our implementation ran: counted here (the chain counts the others).
      .then((uRes) => (request.entered ? write(uRes) : countRefusal(uRes, handler.requestPath, onRejected ?? uncounted).then(write)))
      .catch((err: unknown) => {
        // The client went away mid-response, or the response could not be written: nothing left to tell it.
        if (ConnectError.from(err).code !== ConnectCode.Aborted)
          log.debug({ err, path: handler.requestPath }, "browser protocol response failed");
        if (!res.headersSent) res.destroy();
      });
  };
}
