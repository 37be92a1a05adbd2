import type { DescService, Message } from "@bufbuild/protobuf";
import { type ClientDuplexStream, credentials, type Client as GrpcClient, Metadata, makeGenericClientConstructor } from "@grpc/grpc-js";
import { grpcServiceDefinition } from "../server/grpc-definition.js";

type AnyCall = (...args: unknown[]) => unknown;

/**
 * A plain grpc-js client of a protobuf-es service (methods by local name: `sum`, `chat`), for the
 * client-streaming and bidi tests: the calls grpc-js itself offers, with nothing of the framework's.
 */
export function rawClient<S extends DescService>(service: S, address: string): RawClient<S> {
  const Ctor = makeGenericClientConstructor(grpcServiceDefinition(service) as never, service.name);
  return new Ctor(address, credentials.createInsecure()) as RawClient<S>;
}

export type RawClient<S extends DescService> = GrpcClient & { readonly [K in keyof S["method"]]: AnyCall };

export function metadataOf(entries: Record<string, string>): Metadata {
  const md = new Metadata();
  for (const [k, v] of Object.entries(entries)) md.set(k, v);
  return md;
}

/** Reads a bidi call's messages one at a time: `await read()` is the next one, or null at the end (it throws the call's error). */
export function reader<T extends Message>(call: ClientDuplexStream<Message, Message>): () => Promise<T | null> {
  const iterator = call.iterator({ destroyOnReturn: false });
  return async () => {
    const step = await iterator.next();
    return step.done ? null : (step.value as T);
  };
}

/**
 * The status a call ends with (its `status` event). Call it before the call can end: the event is
 * not replayed. The call's `error` event (the same status) is taken as handled.
 */
export function statusOfCall(call: NodeJS.EventEmitter): Promise<{ code: number; details: string; metadata: Metadata }> {
  call.on("error", () => {});
  // Not events.once(): it rejects on the `error` event that comes before a non-OK status.
  return new Promise((resolve) => call.once("status", resolve));
}
