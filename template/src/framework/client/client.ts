import type { DescMethodServerStreaming, DescMethodUnary, DescService, Message, MessageInitShape, MessageShape } from "@bufbuild/protobuf";
import { create } from "@bufbuild/protobuf";
import { type ChannelCredentials, credentials, Client as GrpcClient, Metadata } from "@grpc/grpc-js";
import { grpcMethodDefinition } from "../server/grpc-definition.js";

export interface CallOptions {
  metadata?: Metadata | Record<string, string>;
  /** Absolute deadline (Date or ms since the epoch). */
  deadline?: Date | number;
  signal?: AbortSignal;
}

type UnaryMethod<M extends DescMethodUnary> = (
  request: MessageInitShape<M["input"]>,
  options?: CallOptions,
) => Promise<MessageShape<M["output"]>>;
type StreamMethod<M extends DescMethodServerStreaming> = (
  request: MessageInitShape<M["input"]>,
  options?: CallOptions,
) => AsyncIterable<MessageShape<M["output"]>>;

/** A promise-based gRPC client typed from the generated service: `await client.echo({ message: "hi" })`. */
export type Client<S extends DescService> = {
  [K in keyof S["method"]]: S["method"][K] extends DescMethodUnary
    ? UnaryMethod<S["method"][K]>
    : S["method"][K] extends DescMethodServerStreaming
      ? StreamMethod<S["method"][K]>
      : never;
} & { close(): void };

function toMetadata(md: CallOptions["metadata"]): Metadata {
  if (md instanceof Metadata) return md;
  const out = new Metadata();
  for (const [k, v] of Object.entries(md ?? {})) out.set(k, v);
  return out;
}

export function createClient<S extends DescService>(
  service: S,
  address: string,
  channelCredentials: ChannelCredentials = credentials.createInsecure(),
): Client<S> {
  const grpc = new GrpcClient(address, channelCredentials);
  const client: Record<string, unknown> = { close: () => grpc.close() };
  for (const m of service.methods) {
    const d = grpcMethodDefinition(m);
    if (m.methodKind === "unary") {
      client[m.localName] = (request: object, options: CallOptions = {}) =>
        new Promise<Message>((resolve, reject) => {
          const call = grpc.makeUnaryRequest(
            d.path,
            d.requestSerialize,
            d.responseDeserialize,
            create(m.input, request as never),
            toMetadata(options.metadata),
            { deadline: options.deadline },
            (err, res) => (err ? reject(err) : resolve(res as Message)),
          );
          options.signal?.addEventListener("abort", () => call.cancel(), { once: true });
        });
    } else if (m.methodKind === "server_streaming") {
      client[m.localName] = (request: object, options: CallOptions = {}) => {
        const call = grpc.makeServerStreamRequest(
          d.path,
          d.requestSerialize,
          d.responseDeserialize,
          create(m.input, request as never),
          toMetadata(options.metadata),
          {
            deadline: options.deadline,
          },
        );
        options.signal?.addEventListener("abort", () => call.cancel(), { once: true });
        return call as AsyncIterable<Message>;
      };
    }
  }
  return client as Client<S>;
}
