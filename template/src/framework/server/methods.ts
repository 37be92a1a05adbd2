import { create, type Message } from "@bufbuild/protobuf";
import type { Chain } from "../call/chain.js";
import { methodInfo } from "../call/method.js";
import type { Call, CallResult, MethodInfo, Next } from "../call/types.js";
import type { ServiceImpl } from "./service.js";

/** A served method: what it is, and its handler already wrapped in the chain. */
export interface BoundMethod {
  readonly info: MethodInfo;
  readonly invoke: Next;
}

type AnyHandler = (request: Message, ctx: Call["ctx"]) => unknown;

/** The innermost step of the chain: runs the user's handler and turns its result into messages. */
function handlerStep(info: MethodInfo, handler: AnyHandler): Next {
  const output = info.desc.output;
  if (info.kind === "unary") {
    return async (call) => ({ message: create(output, (await handler(call.request, call.ctx)) as never) });
  }
  return async (call): Promise<CallResult> => {
    const source = handler(call.request, call.ctx) as AsyncIterable<never>;
    return {
      stream: (async function* () {
        for await (const init of source) yield create(output, init);
      })(),
    };
  };
}

/** Binds every method of every service to its handler through the chain, once, at start-up. */
export function bindMethods(services: readonly ServiceImpl[], chain: Chain): BoundMethod[] {
  const bound: BoundMethod[] = [];
  for (const service of services) {
    const handlers = service.handlers as Record<string, AnyHandler | undefined>;
    for (const desc of service.desc.methods) {
      const handler = handlers[desc.localName];
      if (typeof handler !== "function")
        throw new Error(`${service.desc.typeName}: no handler for ${desc.name} (expected handlers.${desc.localName})`);
      const info = methodInfo(desc);
      bound.push({ info, invoke: chain.compose(info, handlerStep(info, handler)) });
    }
  }
  return bound;
}
