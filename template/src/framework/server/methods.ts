import { create } from "@bufbuild/protobuf";
import type { Chain } from "../call/chain.js";
import type { CallContext } from "../call/context.js";
import type { ServedService } from "../call/handlers.js";
import { methodInfo } from "../call/method.js";
import type { RequestStream } from "../call/request-stream.js";
import { ResponseStream } from "../call/response-stream.js";
import { Code, GrpcError } from "../call/status.js";
import type { CallResult, MethodInfo, Next } from "../call/types.js";
import { rootLogger } from "../logging/logger.js";
import { ResponseLimit } from "./response-size.js";

/** A served method: what it is, and its handler already wrapped in the chain. */
export interface BoundMethod {
  readonly info: MethodInfo;
  readonly invoke: Next;
  /** GRPC_MAX_SEND_MSG_SIZE, which the gRPC adapter applies to each message of a stream as it writes it. */
  readonly responseLimit?: ResponseLimit | undefined;
}

export interface BindOptions {
  /** GRPC_MAX_SEND_MSG_SIZE: over gRPC, a larger response fails RESOURCE_EXHAUSTED inside the chain. */
  maxSendBytes?: number;
}

type AnyHandler = (input: never, ctx: CallContext) => unknown;

/**
 * The innermost step of the chain: runs the user's handler and turns its result into messages. Over
 * gRPC, a single response is checked against the send limit here, where the chain sees the outcome.
 */
function handlerStep(info: MethodInfo, handler: AnyHandler, limit: ResponseLimit | undefined): Next {
  const output = info.desc.output;
  switch (info.kind) {
    case "unary": {
      const plain = (response: unknown): CallResult => ({ message: create(output, response as never) });
      const checked = limit && ((response: unknown): CallResult => limit.check(output, create(output, response as never)));
      // Not an async function: an async handler's promise gets one reaction, and a handler that answers
      // synchronously none at all (a throw is the chain's rejection, see Chain.compose).
      return (call) => {
        const toResult = checked !== undefined && call.ctx.transport === "grpc" ? checked : plain;
        const response = handler(call.request as never, call.ctx);
        if (response instanceof Promise) return response.then(toResult);
        if (isThenable(response)) return Promise.resolve(response).then(toResult);
        return Promise.resolve(toResult(response));
      };
    }
    case "server_streaming": {
      // The handler's generator is the stream itself: the chain's hooks and the `create` of each message
      // ride on one ResponseStream, with no generator of the framework's in between.
      const toMessage = (init: unknown) => create(output, init as never);
      return async (call): Promise<CallResult> => ({
        stream: new ResponseStream(handler(call.request as never, call.ctx) as AsyncIterable<unknown>, toMessage),
      });
    }
    case "client_streaming":
      return async (call) => {
        const requests = call.requests as RequestStream;
        try {
          const response = await handler(requests as never, call.ctx);
          // An invalid message the handler caught still fails the call.
          if (requests.failed) throw requests.error;
          const message = create(output, response as never);
          return limit !== undefined && call.ctx.transport === "grpc" ? limit.check(output, message) : { message };
        } catch (err) {
          throw requests.failed ? requests.error : err;
        } finally {
          // Answered before the client was done (early response): the rest of its messages are discarded.
          void requests.return();
        }
      };
    case "bidi_streaming":
      return async (call): Promise<CallResult> => {
        const requests = call.requests as RequestStream;
        // An invalid request message fails the call even when the handler caught it: at its next response
        // (its generator is then closed), or when it ends. Like server streams, one ResponseStream carries it all.
        const toMessage = (init: unknown) => {
          if (requests.failed) throw requests.error;
          return create(output, init as never);
        };
        const source = failingAtEnd(handler(requests as never, call.ctx) as AsyncIterable<unknown>, requests);
        const stream = new ResponseStream(source, toMessage)
          .mapError((err) => (requests.failed ? requests.error : err))
          // Over, however it ended: whatever the client still sends is discarded (early response).
          .onEnd(() => void requests.return());
        return { stream };
      };
  }
}

function isThenable(value: unknown): value is PromiseLike<unknown> {
  return value !== null && typeof value === "object" && typeof (value as { then?: unknown }).then === "function";
}

/** The handler's responses, ending in the request stream's error instead when a request message failed. */
function failingAtEnd(source: AsyncIterable<unknown>, requests: RequestStream): AsyncIterable<unknown> {
  const it = source[Symbol.asyncIterator]();
  const checkEnd = (step: IteratorResult<unknown>) => {
    if (step.done && requests.failed) throw requests.error;
    return step;
  };
  return {
    [Symbol.asyncIterator]: () => ({
      next: () => it.next().then(checkEnd),
      return: (value?: unknown) => it.return?.(value) ?? Promise.resolve({ done: true, value }),
    }),
  };
}

/** The step of a method the service has no handler for: UNIMPLEMENTED, through the chain like any call. */
function unimplementedStep(info: MethodInfo): Next {
  return (call) => {
    void call.requests?.return();
    return Promise.reject(new GrpcError(Code.UNIMPLEMENTED, `method ${info.path} is not implemented`));
  };
}

/**
 * Binds every method of every service to its handler through the chain, once, at start-up.
 * A method without a handler is served too: it answers UNIMPLEMENTED, and start-up warns once about it.
 */
export function bindMethods(services: readonly ServedService[], chain: Chain, options: BindOptions = {}): BoundMethod[] {
  const bound: BoundMethod[] = [];
  const limit = options.maxSendBytes === undefined ? undefined : new ResponseLimit(options.maxSendBytes, !chain.customized);
  for (const service of services) {
    const handlers = service.handlers as Record<string, AnyHandler | undefined>;
    for (const desc of service.desc.methods) {
      const handler = handlers[desc.localName];
      const info = methodInfo(desc);
      if (typeof handler !== "function") {
        rootLogger().warn({ grpcMethod: info.path }, `no handler for ${desc.name} (handlers.${desc.localName}): it answers UNIMPLEMENTED`);
      }
      const step = typeof handler === "function" ? handlerStep(info, handler, limit) : unimplementedStep(info);
      bound.push({ info, invoke: chain.compose(info, step), responseLimit: limit });
    }
  }
  return bound;
}
