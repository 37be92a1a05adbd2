import type { Message } from "@bufbuild/protobuf";
import { type ChannelCredentials, Client, type ClientReadableStream, credentials, Metadata } from "@grpc/grpc-js";
import { CallContext, runInContext } from "../interceptors/context.js";
import type { CallResult } from "../interceptors/types.js";
import { GATEWAY_PATH_KEY } from "../server/grpc-adapter.js";
import { grpcMethodDefinition } from "../server/grpc-definition.js";
import type { BoundMethod } from "../server/methods.js";

/** What a call through the gateway produced; `trailer` is complete once the result is consumed. */
export interface GatewayCall {
  readonly header: Metadata;
  readonly trailer: Metadata;
  readonly result: CallResult;
}

export interface InvokeOptions {
  metadata: Metadata;
  /** Aborted by the gateway when the HTTP client goes away; in-process, the chain may abort it too. */
  controller: AbortController;
  httpPath: string;
}

/** How the gateway reaches the handlers. */
export interface Invoker {
  invoke(method: BoundMethod, request: Message, options: InvokeOptions): Promise<GatewayCall>;
  close(): void;
}

/** No network hop: the call enters the chain directly, with a context built from the HTTP request. */
export function inProcessInvoker(): Invoker {
  return {
    async invoke(method, request, { metadata, controller, httpPath }) {
      const ctx = new CallContext({
        method: method.info,
        transport: "http",
        metadata,
        controller,
        deadline: Number.POSITIVE_INFINITY,
        httpPath,
      });
      const result = await runInContext(ctx, () => method.invoke({ method: method.info, ctx, request }));
      const inContext: CallResult = "stream" in result ? { stream: iterateInContext(ctx, result.stream) } : result;
      return { header: ctx.responseHeader, trailer: ctx.responseTrailer, result: inContext };
    },
    close() {},
  };
}

/** Each step of the stream runs inside the call's context, so handler code keeps seeing it. */
async function* iterateInContext(ctx: CallContext, stream: AsyncIterable<Message>): AsyncGenerator<Message> {
  const it = stream[Symbol.asyncIterator]();
  try {
    for (;;) {
      const step = await runInContext(ctx, () => it.next());
      if (step.done) return;
      yield step.value;
    }
  } finally {
    await runInContext(ctx, async () => it.return?.());
  }
}

/**
 * A grpc-js client of the local server (TCP loopback or a Unix socket), so the chain runs on
 * the gRPC side exactly as for any other client. Method definitions are made once per method.
 */
export function grpcInvoker(
  target: string,
  channelCredentials: ChannelCredentials = credentials.createInsecure(),
  options: object = {},
): Invoker {
  const client = new Client(target, channelCredentials, options);
  const definitions = new Map<string, ReturnType<typeof grpcMethodDefinition>>();
  const definitionOf = (m: BoundMethod) => {
    let d = definitions.get(m.info.path);
    if (!d) definitions.set(m.info.path, (d = grpcMethodDefinition(m.info.desc)));
    return d;
  };
  return {
    invoke(method, request, { metadata, controller, httpPath }) {
      const { signal } = controller;
      const d = definitionOf(method);
      metadata.set(GATEWAY_PATH_KEY, httpPath);
      const header = new Metadata();
      const trailer = new Metadata();
      if (method.info.kind === "unary") {
        return new Promise<GatewayCall>((resolve, reject) => {
          const call = client.makeUnaryRequest(d.path, d.requestSerialize, d.responseDeserialize, request, metadata, {}, (err, message) => {
            signal.removeEventListener("abort", cancel);
            if (err) reject(err);
            else resolve({ header, trailer, result: { message: message as Message } });
          });
          const cancel = () => call.cancel();
          signal.addEventListener("abort", cancel, { once: true });
          call.on("metadata", (md: Metadata) => header.merge(md));
          call.on("status", (status: { metadata: Metadata }) => trailer.merge(status.metadata));
        });
      }
      const call = client.makeServerStreamRequest(d.path, d.requestSerialize, d.responseDeserialize, request, metadata, {});
      const cancel = () => call.cancel();
      signal.addEventListener("abort", cancel, { once: true });
      call.on("metadata", (md: Metadata) => header.merge(md));
      call.on("status", (status: { metadata: Metadata }) => trailer.merge(status.metadata));
      return Promise.resolve({ header, trailer, result: { stream: readStream(call, () => signal.removeEventListener("abort", cancel)) } });
    },
    close() {
      client.close();
    },
  };
}

async function* readStream(call: ClientReadableStream<unknown>, done: () => void): AsyncGenerator<Message> {
  try {
    for await (const message of call) yield message as Message;
  } finally {
    done();
    call.cancel(); // no-op after a normal end; stops the server side if the reader left early
  }
}
