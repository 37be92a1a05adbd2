import { once } from "node:events";
import type { Message } from "@bufbuild/protobuf";
import type { Metadata, ServerUnaryCall, ServerWritableStream, sendUnaryData } from "@grpc/grpc-js";
import { CallContext, runInContext } from "../call/context.js";
import { type CancelSource, LazyAbortController } from "../call/lazy-abort.js";
import type { MethodInfo } from "../call/types.js";
import { toServiceError } from "../errors/wire.js";
import type { BoundMethod } from "./methods.js";

/** Metadata the gateway adds so gRPC-side logs show the HTTP path the call came in on. */
export const GATEWAY_PATH_KEY = "x-gateway-http-path";

type GrpcCall = ServerUnaryCall<Message, Message> | ServerWritableStream<Message, Message>;

/** One reason for every cancelled call: building an Error (and its stack) per call is measurable. */
const CANCELLED = new Error("call cancelled");

/**
 * A gRPC call's cancellation, for its context: a client cancel, an expired deadline or a force-stop.
 * grpc-js also reports every normal end of the stream as "cancelled"; once the answer is out, nothing is.
 */
class GrpcCancellation implements CancelSource {
  readonly reason = CANCELLED;
  answered = false;
  readonly #call: GrpcCall;

  constructor(call: GrpcCall) {
    this.#call = call;
  }

  get cancelled(): boolean {
    return !this.answered && this.#call.cancelled;
  }

  onCancel(listener: () => void): void {
    this.#call.on("cancelled", () => {
      if (!this.answered) listener();
    });
  }
}

function contextFor(info: MethodInfo, call: GrpcCall, cancellation: GrpcCancellation): CallContext {
  const deadline = call.getDeadline();
  const httpPath = call.metadata.get(GATEWAY_PATH_KEY)[0];
  return new CallContext({
    method: info,
    transport: "grpc",
    metadata: call.metadata,
    controller: new LazyAbortController(cancellation),
    deadline: deadline instanceof Date ? deadline.getTime() : deadline,
    httpPath: typeof httpPath === "string" ? httpPath : undefined,
  });
}

function sendHeader(call: GrpcCall, header: Metadata): void {
  if (Object.keys(header.getMap()).length > 0) call.sendMetadata(header);
}

/**
 * grpc-js handlers for one bound method. They never throw and always answer: a rejected
 * promise would otherwise crash Node or leave the call hanging until its deadline.
 */
export function grpcHandler(method: BoundMethod) {
  const { info, invoke } = method;
  if (info.kind === "unary") {
    return (call: ServerUnaryCall<Message, Message>, callback: sendUnaryData<Message>) => {
      const cancellation = new GrpcCancellation(call);
      const ctx = contextFor(info, call, cancellation);
      runInContext(ctx, () => invoke({ method: info, ctx, request: call.request })).then(
        (result) => {
          cancellation.answered = true;
          sendHeader(call, ctx.responseHeader);
          callback(null, "message" in result ? result.message : undefined, ctx.responseTrailer);
        },
        (err: unknown) => {
          cancellation.answered = true;
          callback(toServiceError(err, ctx.responseHeader, ctx.responseTrailer));
        },
      );
    };
  }
  return (call: ServerWritableStream<Message, Message>) => {
    const cancellation = new GrpcCancellation(call);
    const ctx = contextFor(info, call, cancellation);
    runInContext(ctx, async () => {
      let headerSent = false;
      try {
        const result = await invoke({ method: info, ctx, request: call.request });
        if (!("stream" in result)) throw new Error(`${info.path}: handler returned a single message for a streaming method`);
        for await (const message of result.stream) {
          if (ctx.aborted) break; // the client is gone; leaving the loop ends the handler's generator
          if (!headerSent) {
            sendHeader(call, ctx.responseHeader);
            headerSent = true;
          }
          if (!call.write(message)) await once(call, "drain", { signal: ctx.signal });
        }
        if (!headerSent) sendHeader(call, ctx.responseHeader);
        cancellation.answered = true;
        call.end(ctx.responseTrailer);
      } catch (err) {
        if (ctx.aborted) return; // nobody left to tell
        cancellation.answered = true;
        call.emit(
          "error",
          headerSent ? toServiceError(err, ctx.responseTrailer) : toServiceError(err, ctx.responseHeader, ctx.responseTrailer),
        );
      }
    });
  };
}
