import type { DescMethod, Message } from "@bufbuild/protobuf";
import type { CallContext } from "./context.js";

/** What the chain knows about a method, computed once at start-up. */
export interface MethodInfo {
  readonly desc: DescMethod;
  /** Fully-qualified service name, e.g. `example.v1.ExampleService`. */
  readonly service: string;
  /** Method name as in the proto, e.g. `Echo`. */
  readonly name: string;
  /** gRPC path, e.g. `/example.v1.ExampleService/Echo`. */
  readonly path: string;
  readonly kind: "unary" | "server_streaming";
}

/** One call as it travels down the chain, whichever transport it came from. */
export interface Call {
  readonly method: MethodInfo;
  readonly ctx: CallContext;
  /** The decoded request message. */
  readonly request: Message;
}

/** A unary call resolves to one message, a server-streaming call to a stream of them. */
export type CallResult = { readonly message: Message } | { readonly stream: AsyncIterable<Message> };

export type Next = (call: Call) => Promise<CallResult>;

/**
 * An interceptor wraps the rest of the chain. It is built once per method at start-up,
 * so whatever depends only on the method (labels, validators, filters) is computed
 * there and not on every call: `(next, method) => async (call) => { …; return next(call); }`.
 * Returning `next` itself skips the interceptor for that method at zero cost. One that needs no
 * `await` can be a plain function that returns `next(call)` and throws to fail the call: the
 * chain turns the throw into a rejection, and the `next` it is given never throws.
 */
export type Interceptor = (next: Next, method: MethodInfo) => Next;
