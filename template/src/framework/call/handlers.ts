import type {
  DescMethodBiDiStreaming,
  DescMethodClientStreaming,
  DescMethodServerStreaming,
  DescMethodUnary,
  DescService,
  MessageInitShape,
  MessageShape,
} from "@bufbuild/protobuf";
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

/**
 * A client-streaming handler: reads the requests as they arrive (each read waits for the client's
 * next message) and returns one response. Returning before the client is done is allowed: the rest
 * of its messages are discarded.
 */
export type ClientStreamingHandler<M extends DescMethodClientStreaming> = (
  requests: AsyncIterable<MessageShape<M["input"]>>,
  ctx: CallContext,
) => Promise<MessageInitShape<M["output"]>> | MessageInitShape<M["output"]>;

/**
 * A bidi handler: an async generator over the requests that yields responses whenever it likes;
 * each `yield` waits until the transport has taken the message (back-pressure).
 */
export type BidiStreamingHandler<M extends DescMethodBiDiStreaming> = (
  requests: AsyncIterable<MessageShape<M["input"]>>,
  ctx: CallContext,
) => AsyncIterable<MessageInitShape<M["output"]>>;

/** The handler type of one method, from its kind. */
export type HandlerOf<M> = M extends DescMethodUnary
  ? UnaryHandler<M>
  : M extends DescMethodServerStreaming
    ? ServerStreamingHandler<M>
    : M extends DescMethodClientStreaming
      ? ClientStreamingHandler<M>
      : M extends DescMethodBiDiStreaming
        ? BidiStreamingHandler<M>
        : never;

/**
 * One handler per RPC, keyed by the method's local name (`echo` for `Echo`), typed from the generated
 * code. A method left out answers UNIMPLEMENTED (start-up logs a warning naming it).
 */
export type ServiceHandlers<S extends DescService> = {
  [K in keyof S["method"]]?: HandlerOf<S["method"][K]>;
};

/**
 * A service as the transports serve it: its descriptor and its handlers. (What a service hands the
 * composition root, `defineService`'s ServiceImpl, is one, with its hooks and workers besides.)
 */
export interface ServedService<S extends DescService = DescService> {
  readonly desc: S;
  readonly handlers: ServiceHandlers<S>;
}
