import { randomBytes } from "node:crypto";
import type { Http2Session } from "node:http2";
import type { Message } from "@bufbuild/protobuf";
import type {
  Metadata,
  ServerDuplexStream,
  ServerReadableStream,
  ServerUnaryCall,
  ServerWritableStream,
  sendUnaryData,
} from "@grpc/grpc-js";
import { CallContext, runInContext } from "../call/context.js";
import { drained } from "../call/drained.js";
import { type CancelSource, LazyAbortController } from "../call/lazy-abort.js";
import { firstValue, isEmptyMetadata } from "../call/metadata-values.js";
import { emptyRequestOf } from "../call/method.js";
import { RequestStream } from "../call/request-stream.js";
import { ResponseStream } from "../call/response-stream.js";
import { Code, GrpcError } from "../call/status.js";
import type { CallResult, MethodInfo } from "../call/types.js";
import { toServiceError } from "../errors/wire.js";
import { noteRequestReader } from "./first-message.js";
import { sentStatus } from "./grpc-rejections.js";
import { afterRoundTrip } from "./half-close.js";
import type { BoundMethod } from "./methods.js";
import type { PeerDirectory } from "./peers.js";
import { wireResponse } from "./response-size.js";

/** Metadata the gateway adds so gRPC-side logs show the HTTP path the call came in on. */
export const GATEWAY_PATH_KEY = "x-gateway-http-path";

// Any gRPC client can send that header too: only a value that starts with this process's random token (which
// the gateway, in the same process, knows) is taken as the HTTP path; anything else is not logged as one.
const GATEWAY_PATH_TOKEN = `${randomBytes(16).toString("base64url")}:`;

/**
 * The value the gateway sends in GATEWAY_PATH_KEY: the HTTP path, and the call's deadline as the gateway
 * holds it (epoch ms). The server takes that deadline rather than the one it derives from `grpc-timeout`,
 * which lands later by the time the request took to arrive: the gateway's client cancels at its own
 * deadline, and a cancel the server saw before its later deadline would be logged and counted as
 * CANCELLED instead of DEADLINE_EXCEEDED. Same process, same clock.
 */
export function gatewayPathValue(httpPath: string, deadline: number, stream?: number): string {
  return stream === undefined ? `${GATEWAY_PATH_TOKEN}${deadline}:${httpPath}` : `${GATEWAY_PATH_TOKEN}${deadline}#${stream}:${httpPath}`;
}

/**
 * Why the gateway cancelled a call whose requests it streams from an HTTP body, by the number it sent in
 * GATEWAY_PATH_KEY: a message it could not decode (INVALID_ARGUMENT, RESOURCE_EXHAUSTED…), which the HTTP client
 * was answered. Over the gRPC hop only a cancel says so; the server takes the reason from here (same process),
 * so the call is logged and counted with the client's code rather than CANCELLED. Set before the cancel is sent;
 * kept 10 s at most.
 */
const gatewayStreamFailures = new Map<number, GrpcError>();
let gatewayStreams = 0;

/** A number for one gateway call that streams requests (see gatewayStreamFailures). */
export function nextGatewayStream(): number {
  gatewayStreams = (gatewayStreams + 1) % Number.MAX_SAFE_INTEGER;
  return gatewayStreams;
}

/** The gateway is about to cancel stream `stream` because its requests failed with `err`. */
export function reportGatewayStreamFailure(stream: number, err: GrpcError): void {
  gatewayStreamFailures.set(stream, err);
  setTimeout(() => gatewayStreamFailures.delete(stream), 10_000).unref();
}

/** Whether a GATEWAY_PATH_KEY value is this process's gateway's (a call its HTTP side already admitted). */
export function isGatewayHop(value: unknown): boolean {
  return typeof value === "string" && value.startsWith(GATEWAY_PATH_TOKEN);
}

type GrpcCall =
  | ServerUnaryCall<Message, Message>
  | ServerWritableStream<Message, Message>
  | ServerReadableStream<Message, Message>
  | ServerDuplexStream<Message, Message>;

/** One reason for every cancelled call: building an Error (and its stack) per call is measurable. */
const CANCELLED = new Error("call cancelled");

/**
 * A gRPC call's cancellation, for its context: a client cancel, an expired deadline or a force-stop.
 * grpc-js also reports every normal end of the stream as "cancelled"; once the answer is out, nothing is.
 * `cancelled` is what "nobody is left to answer" means: the client went away, or grpc-js ended the call
 * itself. A call that was merely aborted (by its handler or an interceptor: `ctx.abort()`) is not that,
 * and still gets its status. One per call, so no #private field (see CallContext).
 */
class GrpcCancellation implements CancelSource {
  answered = false;
  /** The gateway's number for a call whose requests it streams (gatewayPathValue), if it is one. */
  gatewayStream: number | undefined;
  private readonly _call: GrpcCall;

  constructor(call: GrpcCall) {
    this._call = call;
  }

  get reason(): Error {
    return this.gatewayFailure() ?? CANCELLED;
  }

  /** Why the gateway cancelled this call, when it did because its requests could not be decoded. */
  gatewayFailure(): GrpcError | undefined {
    return this.gatewayStream === undefined ? undefined : gatewayStreamFailures.get(this.gatewayStream);
  }

  get cancelled(): boolean {
    return !this.answered && this._call.cancelled;
  }

  onCancel(listener: () => void): void {
    (this._call as ServerUnaryCall<Message, Message>).on("cancelled", () => {
      if (!this.answered) listener();
    });
  }
}

/** An empty header is not sent: grpc-js sends its own defaults with the first message or the status. */
function sendHeaderOf(call: GrpcCall): (header: Metadata) => void {
  return (header) => {
    if (!isEmptyMetadata(header)) call.sendMetadata(header);
  };
}

/** The verified client certificate's identity on the context and in its log fields (mTLS on: GRPC_TLS_CLIENT_CA_FILE). */
function attachPeer(ctx: CallContext, call: GrpcCall, peers: PeerDirectory): void {
  // Read once per connection (PeerDirectory), found here by the connection's address: no certificate parsed per call.
  const peer = peers.get(call.getPeer());
  if (peer === undefined) return;
  ctx.peer = peer;
  ctx.fields.peer = peer.spiffeId ?? peer.subject;
}

function contextFor(info: MethodInfo, call: GrpcCall, cancellation: GrpcCancellation, peers: PeerDirectory | undefined): CallContext {
  const given = call.getDeadline();
  let deadline = given instanceof Date ? given.getTime() : given;
  const gateway = gatewayCallOf(call.metadata);
  if (gateway !== undefined) {
    deadline = Math.min(deadline, gateway.deadline);
    cancellation.gatewayStream = gateway.stream;
  }
  const ctx = new CallContext({
    method: info,
    transport: "grpc",
    metadata: call.metadata,
    controller: new LazyAbortController(cancellation),
    deadline,
    httpPath: gateway?.httpPath,
    sendHeader: sendHeaderOf(call),
  });
  if (peers) attachPeer(ctx, call, peers);
  return ctx;
}

/**
 * The HTTP path and deadline the gateway sent, if it did (gatewayPathValue); the header is removed either
 * way, so handlers never see it.
 */
function gatewayCallOf(metadata: Metadata): { httpPath: string; deadline: number; stream: number | undefined } | undefined {
  const value = firstValue(metadata, GATEWAY_PATH_KEY);
  if (value === undefined) return undefined;
  metadata.remove(GATEWAY_PATH_KEY);
  if (typeof value !== "string" || !value.startsWith(GATEWAY_PATH_TOKEN)) return undefined;
  const colon = value.indexOf(":", GATEWAY_PATH_TOKEN.length);
  if (colon === -1) return undefined;
  const hash = value.indexOf("#", GATEWAY_PATH_TOKEN.length);
  const streamed = hash !== -1 && hash < colon;
  const deadline = Number(value.slice(GATEWAY_PATH_TOKEN.length, streamed ? hash : colon));
  if (Number.isNaN(deadline)) return undefined;
  return { httpPath: value.slice(colon + 1), deadline, stream: streamed ? Number(value.slice(hash + 1, colon)) : undefined };
}

/**
 * The client's messages, pulled one read at a time (grpc-js reads the next message from HTTP/2 only
 * when the stream's buffer wants one). `destroyOnReturn: false`: a handler that stops reading early
 * must not destroy a bidi call's writable side with it.
 */
function requestsOf(
  call: ServerReadableStream<Message, Message> | ServerDuplexStream<Message, Message>,
  ctx: CallContext,
  cancellation: GrpcCancellation,
): RequestStream {
  noteRequestReader(call);
  return new RequestStream(
    call.iterator({ destroyOnReturn: false }),
    () => endOfInput(call, ctx, cancellation),
    (err) => refusal(call, cancellation) ?? err,
  );
}

/**
 * The status grpc-js answered on its own when it could not read a request message (undecodable,
 * oversized, unknown compression), which also ends the handler's input: the client has it already,
 * and the call fails with it, so the metrics and logs say INTERNAL or RESOURCE_EXHAUSTED rather
 * than CANCELLED. grpc-js keeps the HTTP/2 stream on its innermost call, which the handler's call
 * object holds (neither is in its types).
 */
function refusal(call: GrpcCall, cancellation: GrpcCancellation): GrpcError | undefined {
  const sent = sentStatus((call as unknown as { call?: unknown }).call);
  return sent && sent.code !== Code.OK ? new GrpcError(sent.code, sent.message) : cancellation.gatewayFailure();
}

/**
 * Whether the end of the client's messages is a half-close. A grpc-js client that cancels sends
 * END_STREAM and then RST_STREAM (Node's Http2Stream.close() ends the writable side before resetting), and
 * the two can arrive in separate reads: the end is confirmed only after a PING round trip on the call's
 * connection (half-close.ts says why that suffices). A cancel fails the handler's read and aborts its signal
 * instead, so a partial input is never taken for the whole. Once per call, when its input ends; nothing per
 * message.
 *
 * There is no cleaner signal to wait for: when the end arrives, neither grpc-js (call.cancelled, its
 * onCancel, which it learns from the HTTP/2 stream's close) nor the HTTP/2 stream itself (closed,
 * destroyed, rstCode, aborted) shows the cancel yet; they all change only once the RST_STREAM frame is
 * read. grpc-go clients send RST_STREAM alone, so there the question never arises.
 */
function endOfInput(call: GrpcCall, ctx: CallContext, cancellation: GrpcCancellation): Promise<void> {
  if (Date.now() >= ctx.deadline) expire(ctx);
  if (cancellation.cancelled) cancel(call, ctx, cancellation);
  return afterRoundTrip(sessionOf(call)).then(() => {
    if (Date.now() >= ctx.deadline) expire(ctx);
    if (cancellation.cancelled) cancel(call, ctx, cancellation);
  });
}

/** The call's HTTP/2 connection: grpc-js keeps the stream on its innermost call, which the handler's call object holds (neither is in its types). */
function sessionOf(call: GrpcCall): Http2Session | undefined {
  return (call as unknown as { call?: { stream?: { session?: Http2Session } } }).call?.stream?.session;
}

/** The client cancelled (or the server force-stopped the call, or grpc-js refused a message) while the handler was reading. */
function cancel(call: GrpcCall, ctx: CallContext, cancellation: GrpcCancellation): never {
  const cancelled = refusal(call, cancellation) ?? new GrpcError(Code.CANCELLED, "call cancelled");
  ctx.abort(cancelled);
  throw cancelled;
}

/**
 * grpc-js ends a call whose deadline passed on its own (status DEADLINE_EXCEEDED) and ends its input as
 * if the client had half-closed, without a cancel event: the handler must not mistake that for the end
 * of the client's messages, and its signal aborts.
 */
function expire(ctx: CallContext): never {
  const expired = new GrpcError(Code.DEADLINE_EXCEEDED, "deadline exceeded");
  ctx.abort(expired);
  throw expired;
}

/** The status of a failed call: once the header is out, only the trailer can carry metadata. */
function failure(err: unknown, ctx: CallContext) {
  return ctx.headerSent ? toServiceError(err, ctx.responseTrailer) : toServiceError(err, ctx.responseHeader, ctx.responseTrailer);
}

/**
 * Writes a streamed result, waiting for the transport at each message (back-pressure), then the status.
 * Each message is encoded here, as grpc-js would: one larger than the send limit fails the stream with
 * RESOURCE_EXHAUSTED before its end hooks run, so the metrics and the log count what the client gets.
 */
async function writeStream(
  call: ServerWritableStream<Message, Message> | ServerDuplexStream<Message, Message>,
  ctx: CallContext,
  cancellation: GrpcCancellation,
  result: CallResult,
  method: BoundMethod,
): Promise<void> {
  const { info, responseLimit } = method;
  if (!("stream" in result)) throw new Error(`${info.path}: handler returned a single message for a streaming method`);
  const stream = responseLimit ? ResponseStream.of(result.stream) : result.stream;
  const output = info.desc.output;
  for await (const message of stream) {
    if (cancellation.cancelled) break; // the client is gone; leaving the loop ends the handler's generator
    let wire: Message | Buffer = message;
    if (responseLimit) {
      try {
        wire = responseLimit.encode(output, message);
      } catch (err) {
        (stream as ResponseStream).fail(err); // the loop's next read throws it
        continue;
      }
    }
    ctx.sendHeader();
    if (!call.write(wire as Message)) await drained(call, "cancelled"); // bytes pass the serialiser as they are
  }
  if (cancellation.cancelled) return;
  ctx.sendHeader();
  cancellation.answered = true;
  call.end(ctx.responseTrailer);
}

/**
 * grpc-js handlers for one bound method. They never throw and always answer: a rejected
 * promise would otherwise crash Node or leave the call hanging until its deadline.
 */
export function grpcHandler(method: BoundMethod, peers?: PeerDirectory) {
  const { info, invoke } = method;
  switch (info.kind) {
    case "unary":
      return (call: ServerUnaryCall<Message, Message>, callback: sendUnaryData<Message>) => {
        const cancellation = new GrpcCancellation(call);
        const ctx = contextFor(info, call, cancellation, peers);
        // An empty trailer is not made: grpc-js sends the status alone then (with the same bytes).
        runInContext(ctx, invoke, { method: info, ctx, request: call.request }).then(
          (result) => {
            cancellation.answered = true;
            ctx.sendHeader();
            callback(null, "message" in result ? (wireResponse(result) as Message) : undefined, ctx.responseTrailerIfAny);
          },
          (err: unknown) => {
            cancellation.answered = true;
            callback(failure(err, ctx));
          },
        );
      };
    case "client_streaming":
      return (call: ServerReadableStream<Message, Message>, callback: sendUnaryData<Message>) => {
        const cancellation = new GrpcCancellation(call);
        const ctx = contextFor(info, call, cancellation, peers);
        const requests = requestsOf(call, ctx, cancellation);
        runInContext(ctx, invoke, { method: info, ctx, request: emptyRequestOf(info), requests }).then(
          (result) => {
            if (cancellation.cancelled) return; // nobody left to tell
            cancellation.answered = true;
            ctx.sendHeader();
            callback(null, "message" in result ? (wireResponse(result) as Message) : undefined, ctx.responseTrailerIfAny);
          },
          (err: unknown) => {
            if (cancellation.cancelled) return;
            cancellation.answered = true;
            callback(failure(err, ctx));
          },
        );
      };
    case "server_streaming":
    case "bidi_streaming":
      return (call: ServerWritableStream<Message, Message> | ServerDuplexStream<Message, Message>) => {
        const cancellation = new GrpcCancellation(call);
        const ctx = contextFor(info, call, cancellation, peers);
        const bidi = info.kind === "bidi_streaming";
        const requests = bidi ? requestsOf(call as ServerDuplexStream<Message, Message>, ctx, cancellation) : undefined;
        const request = bidi ? emptyRequestOf(info) : (call as ServerWritableStream<Message, Message>).request;
        runInContext(ctx, async () => {
          try {
            await writeStream(call, ctx, cancellation, await invoke({ method: info, ctx, request, requests }), method);
          } catch (err) {
            if (cancellation.cancelled) return; // nobody left to tell
            cancellation.answered = true;
            call.emit("error", failure(err, ctx));
          }
        });
      };
  }
}
