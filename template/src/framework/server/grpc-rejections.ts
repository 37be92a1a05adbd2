import type { Http2ServerRequest } from "node:http2";
import type { Metadata, ServerInterceptingCall, ServerInterceptingCallInterface, ServerInterceptor } from "@grpc/grpc-js";
import { Code } from "../call/status.js";
import { decodeGrpcMessage } from "../errors/grpc-message.js";
import type { BoundMethod } from "./methods.js";

// grpc-js exports neither name from its index.
type InterceptingServerListener = Parameters<ServerInterceptingCallInterface["start"]>[0];
type PartialStatusObject = Parameters<ServerInterceptingCallInterface["sendStatus"]>[0];

/** Told about a call grpc-js ended before its handler ran: the method's gRPC path and the status code sent. */
export type OnRejectedBeforeHandler = (path: string, code: number) => void;

/**
 * A grpc-js server interceptor that reports the unary and server-streaming calls grpc-js ends before
 * our handler runs, which the chain therefore never sees: a request that cannot be decoded
 * (INTERNAL), is larger than GRPC_MAX_RECV_MSG_SIZE (RESOURCE_EXHAUSTED), is compressed with an
 * unknown encoding (UNIMPLEMENTED), carries a malformed `grpc-timeout` (INTERNAL), or whose deadline
 * passes before the request arrives (DEADLINE_EXCEEDED), and requests with no message or two
 * (UNIMPLEMENTED). grpc-js runs those handlers only once the request message and the client's
 * half-close are in; client- and bidi-streaming handlers run as soon as the headers arrive, so the
 * chain sees (and counts) every such call, and this interceptor leaves them alone, as it does health,
 * reflection and unknown methods.
 *
 * The per-call cost is one small object forwarding each event (no closure per call or per message).
 */
export function rejectionsBeforeHandler(methods: readonly BoundMethod[], onRejected: OnRejectedBeforeHandler): ServerInterceptor {
  const watched = new Set(methods.filter((m) => m.info.kind === "unary" || m.info.kind === "server_streaming").map((m) => m.info.path));
  // grpc-js types the result as its own class; at run time it only uses the interface (as its own chain does).
  return (descriptor, call) =>
    (watched.has(descriptor.path) ? new WatchedCall(descriptor.path, call, onRejected) : call) as ServerInterceptingCall;
}

/** What grpc-js keeps of the HTTP/2 stream on its own call object (not in its types). */
interface WithStream {
  stream?: Pick<Http2ServerRequest["stream"], "sentHeaders" | "sentTrailers">;
}

/**
 * One unary or server-streaming call, passed through unchanged. It tells handler-bound calls (one
 * message, then the half-close: grpc-js runs the handler there) from calls ended before that.
 * One per call, so no #private field or method (see CallContext).
 */
class WatchedCall implements ServerInterceptingCallInterface, InterceptingServerListener {
  private readonly _path: string;
  private readonly _next: ServerInterceptingCallInterface;
  private readonly _onRejected: OnRejectedBeforeHandler;
  private _listener: InterceptingServerListener | undefined;
  private _messages = 0;
  /** The handler ran (the chain counts the call), or the call was already reported. */
  private _settled = false;

  constructor(path: string, next: ServerInterceptingCallInterface, onRejected: OnRejectedBeforeHandler) {
    this._path = path;
    this._next = next;
    this._onRejected = onRejected;
  }

  private _reject(code: number): void {
    if (this._settled) return;
    this._settled = true;
    this._onRejected(this._path, code);
  }

  // Inbound events, from grpc-js to the handler.
  onReceiveMetadata(metadata: Metadata): void {
    this._listener!.onReceiveMetadata(metadata);
  }

  onReceiveMessage(message: unknown): void {
    this._messages++;
    this._listener!.onReceiveMessage(message);
  }

  onReceiveHalfClose(): void {
    // Exactly one message: grpc-js now runs the handler, inside the chain. (It answers anything else itself.)
    if (this._messages === 1) this._settled = true;
    this._listener!.onReceiveHalfClose();
  }

  /**
   * grpc-js reports every end of a call here. Unsettled, the call ended before the handler: with the
   * status grpc-js sent on its own (which no interceptor sees go by; the HTTP/2 stream kept it), or
   * with none, when the client cancelled or went away.
   */
  onCancel(): void {
    if (!this._settled) this._reject(sentStatus(this._next)?.code ?? Code.CANCELLED);
    this._listener!.onCancel();
  }

  // Outbound, from the handler (or grpc-js's own answer to a bad request) to the client.
  start(listener: InterceptingServerListener): void {
    this._listener = listener;
    this._next.start(this);
  }

  sendMetadata(metadata: Metadata): void {
    this._next.sendMetadata(metadata);
  }

  sendMessage(message: unknown, callback: () => void): void {
    this._next.sendMessage(message, callback);
  }

  sendStatus(status: PartialStatusObject): void {
    // Before the handler ran, a status from above is grpc-js refusing a request with no message or two, unless
    // the server already answered on the stream itself (GRPC_FIRST_MESSAGE_TIMEOUT_SECONDS, grpc-connections.ts:
    // grpc-js then reads the stream's end as a half-close with no message).
    this._reject(sentStatus(this._next)?.code ?? status.code);
    this._next.sendStatus(status);
  }

  startRead(): void {
    this._next.startRead();
  }

  getPeer() {
    return this._next.getPeer();
  }

  getDeadline() {
    return this._next.getDeadline();
  }

  getHost() {
    return this._next.getHost();
  }

  getAuthContext() {
    return this._next.getAuthContext();
  }

  getConnectionInfo() {
    return this._next.getConnectionInfo();
  }

  getMetricsRecorder() {
    return this._next.getMetricsRecorder();
  }
}

/**
 * The status grpc-js sent on its own on this call's HTTP/2 stream (a trailers-only answer, or
 * trailers), if any: `call` is grpc-js's innermost call object, which keeps the stream.
 */
export function sentStatus(call: unknown): { code: number; message: string } | undefined {
  const stream = (call as WithStream | undefined)?.stream;
  const headers = stream?.sentHeaders?.["grpc-status"] !== undefined ? stream.sentHeaders : stream?.sentTrailers;
  const code = headers?.["grpc-status"];
  if (code === undefined) return undefined;
  const message = headers?.["grpc-message"];
  return { code: Number(code), message: typeof message === "string" ? decodeGrpcMessage(message) : "" };
}
