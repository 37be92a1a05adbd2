import type { DescMethodServerStreaming, DescMethodUnary, DescService, MessageInitShape, MessageShape } from "@bufbuild/protobuf";
import type { CallContext } from "./context.js";

/** A unary handler: a plain (async) function from request to response. */
export type UnaryHandler<M extends DescMethodUnary> = (
  request: MessageShape<M["input"]>,
  ctx: CallContext,
) => Promise<MessageInitShape<M["output"]>> | MessageInitShape<M["output"]>;

/** A server-streaming handler: an async generator that yields the responses. */
export type ServerStreamingHandler<M extends DescMethodServerStreaming> = (
  request: MessageShape<M["input"]>,
  ctx: CallContext,
) => AsyncIterable<MessageInitShape<M["output"]>>;

/** One handler per RPC, keyed by the method's local name (`echo` for `Echo`), typed from the generated code. */
export type ServiceHandlers<S extends DescService> = {
  [K in keyof S["method"]]: S["method"][K] extends DescMethodUnary
    ? UnaryHandler<S["method"][K]>
    : S["method"][K] extends DescMethodServerStreaming
      ? ServerStreamingHandler<S["method"][K]>
      : never; // client and bidi streaming are not served by this framework
};
