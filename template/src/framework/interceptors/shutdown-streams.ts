import type { CallContext } from "../call/context.js";
import type { RequestStream } from "../call/request-stream.js";
import { ResponseStream } from "../call/response-stream.js";
import { type GrpcError, SHUTTING_DOWN } from "../call/status.js";
import type { CallResult, Interceptor } from "../call/types.js";
import type { ShutdownEnds } from "./timeout.js";

// The executor of each call's promise hands its functions over through these (as in timeout.ts).
let capturedResolve: (result: CallResult) => void = () => {};
let capturedReject: (error: unknown) => void = () => {};
function captureSettlers(resolve: (result: CallResult) => void, reject: (error: unknown) => void): void {
  capturedResolve = resolve;
  capturedReject = reject;
}

/** One HTTP stream running in this process, until its response stream ends. */
class OpenStream {
  stream: ResponseStream | undefined;
  readonly promise: Promise<CallResult>;
  readonly resolve: (result: CallResult) => void;
  readonly reject: (error: unknown) => void;

  constructor(
    readonly ctx: CallContext,
    readonly requests: RequestStream | undefined,
    readonly open: Set<OpenStream>,
  ) {
    this.promise = new Promise(captureSettlers);
    this.resolve = capturedResolve;
    this.reject = capturedReject;
    open.add(this);
  }

  settle(result: CallResult): void {
    if ("message" in result) {
      this.open.delete(this);
      this.resolve(result);
      return;
    }
    const stream = ResponseStream.of(result.stream)
      .interruptible()
      .onEnd(() => this.open.delete(this));
    this.stream = stream;
    this.resolve(stream === result.stream ? result : { stream });
  }

  fail(error: unknown): void {
    this.open.delete(this);
    this.reject(error);
  }

  /** As the timeout step ends a call whose deadline passed: through its stream objects, whatever the handler does. */
  end(): void {
    this.open.delete(this);
    this.ctx.abort(SHUTTING_DOWN);
    this.requests?.fail(SHUTTING_DOWN);
    if (this.stream) this.stream.fail(SHUTTING_DOWN);
    else this.reject(SHUTTING_DOWN);
  }
}

/**
 * The server-streaming and bidi calls of the HTTP port that run in this process (Connect, gRPC-Web, and the
 * gateway in in-process mode), so that shutdown can end them with UNAVAILABLE when its budget runs out: each
 * transport then writes that status in its own form (gRPC-Web trailers, Connect's end-stream message, an NDJSON
 * error line, an SSE error event) instead of the connection being cut with none, and clients retry elsewhere.
 * gRPC calls are ended by the gRPC server itself (grpc-shutdown.ts), WebSockets by theirs (websocket.ts).
 * Unary calls and gRPC ones pass through untouched: a set insert and delete per HTTP stream, nothing per message
 * beyond the interruptible read the timeout step also asks for. The HTTP calls with a single response (unary,
 * client-streaming) are ended by the timeout step, which already holds them (`alsoEnd`).
 */
export class HttpStreams implements ShutdownEnds {
  readonly #open = new Set<OpenStream>();
  readonly #others: ((reason: GrpcError) => number)[] = [];

  readonly interceptor: Interceptor = (next, method) => {
    if (method.kind !== "server_streaming" && method.kind !== "bidi_streaming") return next;
    return (call) => {
      if (call.ctx.transport !== "http") return next(call);
      const open = new OpenStream(call.ctx, call.requests?.interruptible(), this.#open);
      next(call).then(
        (result) => open.settle(result),
        (err: unknown) => open.fail(err),
      );
      return open.promise;
    };
  };

  /** How many are open. */
  get size(): number {
    return this.#open.size;
  }

  /** Another step's HTTP calls, which `endAll` ends too: `end` ends them with the reason and says how many. */
  alsoEnd(end: (reason: GrpcError) => number): void {
    this.#others.push(end);
  }

  /** Ends every open stream, and every other HTTP call still running, with UNAVAILABLE (SHUTTING_DOWN); returns how many. */
  endAll(): number {
    let ended = this.#open.size;
    for (const open of [...this.#open]) open.end();
    for (const end of this.#others) ended += end(SHUTTING_DOWN);
    return ended;
  }
}
