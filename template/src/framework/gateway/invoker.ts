import type { DescMessage, Message } from "@bufbuild/protobuf";
import { Metadata } from "@grpc/grpc-js";
import { CallContext, runInContext } from "../call/context.js";
import type { CallAbortController } from "../call/lazy-abort.js";
import { RequestStream } from "../call/request-stream.js";
import { asGrpcError, GrpcError } from "../call/status.js";
import { type CallResult, streamsResponses } from "../call/types.js";
import { binaryCodec } from "../codec/codec.js";
import { GATEWAY_PATH_KEY, gatewayPathValue, nextGatewayStream, reportGatewayStreamFailure } from "../server/grpc-adapter.js";
import type { BoundMethod } from "../server/methods.js";
import { GrpcWireClient, type WireClientOptions } from "./grpc-wire-client.js";

/**
 * What a call through the gateway produced. The response header metadata is kept whether the call
 * succeeded or not; `trailer` is complete once the result (or its stream) is consumed.
 */
export interface GatewayCall {
  readonly header: Metadata;
  readonly trailer: Metadata;
  readonly result: CallResult | { readonly error: unknown };
  /**
   * In-process: the call's context, whose response header the gateway can read without making
   * metadata (`responseHeaderEntries`); `header` and `trailer` are its metadata, made when read.
   */
  readonly ctx?: CallContext;
}

/** A call that ran in this process: its response metadata are the context's, read (and so made) only if needed. */
class InProcessCall implements GatewayCall {
  constructor(
    readonly ctx: CallContext,
    readonly result: CallResult,
  ) {}

  get header(): Metadata {
    return this.ctx.responseHeader;
  }

  get trailer(): Metadata {
    return this.ctx.responseTrailer;
  }
}

export interface InvokeOptions {
  metadata: Metadata;
  /** Aborted by the gateway when the HTTP client goes away; in-process, the chain may abort it too. */
  controller: CallAbortController;
  httpPath: string;
  /** Absolute deadline in ms since the epoch (from `Grpc-Timeout`); Infinity for none. */
  deadline: number;
  /**
   * Client-streaming and bidi methods: the requests, decoded as the call reads them (`request` is then
   * unused). Throwing ends the call with that error; the end of them is the client's half-close.
   */
  requests?: AsyncIterator<Message>;
  /**
   * Called when the call's response header goes out before its first message (a stream's handler
   * calling `ctx.sendHeader()`), so the gateway can send the HTTP response headers at once.
   */
  onHeader?: () => void;
}

/** How the gateway reaches the handlers. `invoke` never rejects: failures come back as `result.error`. */
export interface Invoker {
  invoke(method: BoundMethod, request: Message, options: InvokeOptions): Promise<GatewayCall>;
  close(): void;
}

/** No network hop: the call enters the chain directly, with a context built from the HTTP request. */
export function inProcessInvoker(): Invoker {
  return {
    async invoke(method, request, { metadata, controller, httpPath, deadline, requests, onHeader }) {
      const ctx = new CallContext({
        method: method.info,
        transport: "http",
        metadata,
        controller,
        deadline,
        httpPath,
        sendHeader: onHeader,
      });
      let result: CallResult;
      try {
        // Client-streaming and bidi: the handler reads the HTTP body's messages as they are decoded.
        // (Unary calls keep the shape the gRPC adapter gives them, without `requests`.)
        const call = requests
          ? { method: method.info, ctx, request, requests: new RequestStream(requests) }
          : { method: method.info, ctx, request };
        // Deadlines are the chain's: its timeout step ends the call, stream or not, when one passes.
        result = await runInContext(ctx, () => method.invoke(call));
      } catch (error) {
        // As over gRPC, where errors go out trailers-only: the error's metadata, the header and the trailer, all as trailers.
        const trailer = asGrpcError(error)?.metadata.clone() ?? new Metadata();
        trailer.merge(ctx.responseHeader);
        trailer.merge(ctx.responseTrailer);
        return { header: new Metadata(), trailer, result: { error } };
      }
      if ("message" in result) return new InProcessCall(ctx, result);
      return new InProcessCall(ctx, { stream: iterateInContext(ctx, result.stream) });
    },
    close() {},
  };
}

/**
 * Each step of the stream runs inside the call's context, so handler code keeps seeing it. The deadline
 * is the chain's (its timeout step fails the stream when it passes, whether or not the handler watches
 * its signal): nothing here waits on it, so a long stream holds nothing per message.
 */
async function* iterateInContext(ctx: CallContext, stream: AsyncIterable<Message>): AsyncGenerator<Message> {
  const it = stream[Symbol.asyncIterator]();
  try {
    for (;;) {
      const step = await runInContext(ctx, () => it.next());
      if (step.done) return;
      yield step.value;
    }
  } finally {
    // Not awaited once aborted (the deadline, the client gone): a handler that ignores its signal must not hold the response.
    const closing = runInContext(ctx, async () => it.return?.());
    if (!ctx.aborted) await closing;
    else closing.catch(() => {});
  }
}

/**
 * A gRPC client of the local server (TCP loopback, TLS or a Unix socket), so the chain runs on the
 * gRPC side exactly as for any other client. It speaks gRPC on node:http2 directly (grpc-wire-client.ts):
 * grpc-js's client layers cost most of a gateway request over a socket.
 */
export function grpcInvoker(target: string, options: WireClientOptions = {}): Invoker {
  const client = new GrpcWireClient(target, options);
  const decoders = new Map<string, (bytes: Buffer) => Message>();
  const decoderOf = (m: BoundMethod) => {
    let d = decoders.get(m.info.path);
    if (!d) {
      const output = binaryCodec(m.info.desc.output);
      decoders.set(m.info.path, (d = (bytes) => output.decode(bytes)));
    }
    return d;
  };
  return {
    invoke(method, request, { metadata, controller, httpPath, deadline, requests, onHeader }) {
      const header = new Metadata();
      const trailer = new Metadata();
      let message: Uint8Array | undefined;
      let messages: AsyncIterator<Uint8Array> | undefined;
      let stream: number | undefined;
      if (requests) {
        stream = nextGatewayStream();
        messages = encoded(requests, method.info.desc.input, stream);
      } else {
        try {
          message = binaryCodec(method.info.desc.input).encode(request);
        } catch (error) {
          return Promise.resolve({ header, trailer, result: { error } });
        }
      }
      metadata.set(GATEWAY_PATH_KEY, gatewayPathValue(httpPath, deadline, stream));
      const call = { path: method.info.path, metadata, message, messages, deadline, signal: controller.signal, header, trailer, onHeader };
      const decode = decoderOf(method);
      if (!streamsResponses(method.info.kind)) {
        return new Promise<GatewayCall>((resolve) => {
          client.unary(call, decode, (error, response) => resolve({ header, trailer, result: error ? { error } : { message: response! } }));
        });
      }
      return Promise.resolve({ header, trailer, result: { stream: client.serverStream(call, decode) } });
    },
    close() {
      client.close();
    },
  };
}

/**
 * The requests serialised one by one as they are read; `return()` reaches the source. A request that cannot be
 * read (undecodable, too large) is reported to the server before the wire client cancels the call for it, so the
 * server logs and counts the code the HTTP client gets (reportGatewayStreamFailure).
 */
function encoded(requests: AsyncIterator<Message>, desc: DescMessage, stream: number): AsyncIterator<Uint8Array> {
  const input = binaryCodec(desc);
  return {
    async next() {
      let step: IteratorResult<Message>;
      try {
        step = await requests.next();
      } catch (err) {
        if (err instanceof GrpcError) reportGatewayStreamFailure(stream, err);
        throw err;
      }
      return step.done ? step : { done: false, value: input.encode(step.value) };
    },
    async return() {
      await requests.return?.();
      return { done: true, value: undefined };
    },
  };
}
