import type { DescMethod, Message } from "@bufbuild/protobuf";
import type { CallContext } from "./context.js";
import type { RequestStream } from "./request-stream.js";

/** What the chain knows about a method, computed once at start-up. */
export interface MethodInfo {
  readonly desc: DescMethod;
  /** Fully-qualified service name, e.g. `example.v1.ExampleService`. */
  readonly service: string;
  /** Method name as in the proto, e.g. `Echo`. */
  readonly name: string;
  /** gRPC path, e.g. `/example.v1.ExampleService/Echo`. */
  readonly path: string;
  readonly kind: DescMethod["methodKind"];
}

/** One call as it travels down the chain, whichever transport it came from and whatever its kind. */
export interface Call {
  readonly method: MethodInfo;
  readonly ctx: CallContext;
  /**
   * The decoded request of a unary or server-streaming call. Client-streaming and bidi calls send
   * many: for them this is an empty message of the request type (shared; never mutate it), and the
   * messages are in `requests`.
   */
  readonly request: Message;
  /** Client-streaming and bidi calls: the incoming messages, read from the transport as the handler reads. */
  readonly requests?: RequestStream | undefined;
}

/**
 * Unary and client-streaming calls resolve to one message; server-streaming and bidi calls to a
 * stream of them, which the transport writes as it is produced.
 */
export type CallResult = { readonly message: Message } | { readonly stream: AsyncIterable<Message> };

export type Next = (call: Call) => Promise<CallResult>;

/**
 * An interceptor wraps the rest of the chain. It is built once per method at start-up,
 * so whatever depends only on the method (labels, validators, filters) is computed
 * there and not on every call: `(next, method) => async (call) => { …; return next(call); }`.
 * Returning `next` itself skips the interceptor for that method at zero cost. One that needs no
 * `await` can be a plain function that returns `next(call)` and throws to fail the call: the
 * chain turns the throw into a rejection, and the `next` it is given never throws.
 * To see each incoming message of a client-streaming or bidi call, use `call.requests?.inspect(…)`.
 */
export type Interceptor = (next: Next, method: MethodInfo) => Next;

/** Whether the client sends a stream of messages (client-streaming and bidi). */
export function streamsRequests(kind: MethodInfo["kind"]): boolean {
  return kind === "client_streaming" || kind === "bidi_streaming";
}

/** Whether the server answers with a stream of messages (server-streaming and bidi). */
export function streamsResponses(kind: MethodInfo["kind"]): boolean {
  return kind === "server_streaming" || kind === "bidi_streaming";
}
