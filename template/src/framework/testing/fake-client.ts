import { type DescService, fromBinary, type Message, toBinary } from "@bufbuild/protobuf";
import {
  type ChannelInterface,
  connectivityState,
  type InterceptingListener,
  Metadata,
  type ServiceError,
  type StatusObject,
} from "@grpc/grpc-js";
import { Chain } from "../call/chain.js";
import { CallContext, runInContext } from "../call/context.js";
import type { ServiceHandlers } from "../call/handlers.js";
import { emptyRequestOf } from "../call/method.js";
import { RequestStream } from "../call/request-stream.js";
import { Code, GrpcError } from "../call/status.js";
import type { Client, ClientOptions } from "../client/client.js";
import { createClient } from "../client/client.js";
import { toServiceError } from "../errors/wire.js";
import { validate } from "../interceptors/validate.js";
import { type BoundMethod, bindMethods } from "../server/methods.js";

/**
 * A client of `service` whose calls are served in memory by `handlers`, the same handler functions a service
 * is written with (`defineService`'s): no port, no server, no network. The client is `createClient`'s, so code
 * that takes a `Client<S>` cannot tell: requests and responses go through the binary encoding, requests are
 * validated (buf.validate rules: INVALID_ARGUMENT), handlers run as the server runs them, errors arrive as
 * grpc-js errors with their code, details and metadata, deadlines expire (DEADLINE_EXCEEDED, the handler's
 * signal aborted), a cancel or `break` aborts the handler, and the trace ID and metadata reach `ctx`.
 * Errors and delays are injected as in any handler: `throw new GrpcError(Code.UNAVAILABLE, "down")`,
 * `await setTimeout(50)`. A method without a handler answers UNIMPLEMENTED.
 *
 * grpc-js's retries, hedging and balancing live in its channel, which this replaces; the breaker and the
 * metrics are interceptors and stay (the breaker is off unless `options.breaker` turns it on).
 *
 * Why a grpc-js channel and not Connect's router transport: the client type must be the one `createClient`
 * returns, whose calls are made by grpc-js's Client.
 */
export function createFakeClient<S extends DescService>(
  service: S,
  handlers: ServiceHandlers<S>,
  options: ClientOptions<S> = {},
): Client<S> {
  const channel = new FakeChannel(service, handlers as Record<string, unknown>, options.traceHeader ?? "x-trace-id");
  return createClient(service, `fake:///${service.typeName}`, {
    breaker: false,
    ...options,
    channelOptions: { ...options.channelOptions, channelOverride: channel } as never,
  });
}

/** Just enough of grpc-js's Channel for its Client: every call is a FakeCall into the methods bound as a server binds them. */
class FakeChannel implements ChannelInterface {
  readonly #methods = new Map<string, BoundMethod>();

  constructor(
    service: DescService,
    handlers: Record<string, unknown>,
    private readonly traceHeader: string,
  ) {
    // Only the methods given handlers (the others answer UNIMPLEMENTED), through a chain that validates requests.
    const desc = { ...service, methods: service.methods.filter((m) => typeof handlers[m.localName] === "function") };
    const chain = new Chain([{ name: "validate", interceptor: validate() }]);
    for (const bound of bindMethods([{ desc, handlers: handlers as ServiceHandlers<DescService> }], chain))
      this.#methods.set(bound.info.path, bound);
  }

  close(): void {}
  getTarget(): string {
    return "fake";
  }
  getConnectivityState() {
    return connectivityState.READY;
  }
  watchConnectivityState(_state: unknown, _deadline: unknown, callback: (error?: Error) => void): void {
    setImmediate(callback);
  }
  getChannelzRef(): ReturnType<ChannelInterface["getChannelzRef"]> {
    throw new Error("the fake channel has no channelz entry");
  }
  createCall(path: string, deadline: Date | number) {
    return new FakeCall(path, this.#methods.get(path), Number(deadline), this.traceHeader);
  }
}

/**
 * One call, as grpc-js's client drives a call on the wire: start, messages, half-close, reads one at a time
 * (each `startRead` takes one response: back-pressure), then exactly one status.
 */
class FakeCall {
  #listener: InterceptingListener | undefined;
  #ctx: CallContext | undefined;
  readonly #requests: Message[] = [];
  #requestWaiter: (() => void) | undefined;
  #halfClosed = false;
  readonly #responses: Buffer[] = [];
  #reads = 0;
  #readWaiter: (() => void) | undefined;
  #headerSent = false;
  #status: StatusObject | undefined;
  #timer: NodeJS.Timeout | undefined;

  constructor(
    private readonly path: string,
    private readonly method: BoundMethod | undefined,
    private readonly deadline: number,
    private readonly traceHeader: string,
  ) {}

  start(metadata: Metadata, listener: InterceptingListener): void {
    this.#listener = listener;
    const m = this.method;
    if (!m) {
      this.#finish({ code: Code.UNIMPLEMENTED, details: `method ${this.path} is not implemented`, metadata: new Metadata() });
      return;
    }
    const ctx = new CallContext({
      method: m.info,
      transport: "grpc",
      metadata,
      controller: new AbortController(),
      deadline: Number.isFinite(this.deadline) ? this.deadline : Number.POSITIVE_INFINITY,
    });
    const traceId = metadata.get(this.traceHeader)[0];
    if (typeof traceId === "string") ctx.traceId = traceId;
    this.#ctx = ctx;
    if (Number.isFinite(this.deadline)) {
      this.#timer = setTimeout(
        () => this.#fail(new GrpcError(Code.DEADLINE_EXCEEDED, "Deadline exceeded")),
        Math.max(0, this.deadline - Date.now()),
      );
    }
    // Unary and server-streaming handlers start with the request, once the client has half-closed.
    if (m.info.kind === "client_streaming" || m.info.kind === "bidi_streaming") this.#run();
  }

  sendMessageWithContext(context: { callback?: () => void }, message: Buffer): void {
    if (this.method && !this.#status) {
      try {
        this.#requests.push(fromBinary(this.method.info.desc.input, message));
      } catch (error) {
        this.#fail(new GrpcError(Code.INTERNAL, `request does not decode: ${String(error)}`));
      }
      this.#wakeRequests();
    }
    if (context.callback) process.nextTick(context.callback);
  }

  halfClose(): void {
    this.#halfClosed = true;
    const kind = this.method?.info.kind;
    if (kind === "unary" || kind === "server_streaming") this.#run();
    else this.#wakeRequests();
  }

  startRead(): void {
    this.#reads++;
    this.#deliver();
  }

  cancelWithStatus(code: Code, details: string): void {
    this.#fail(new GrpcError(code, details));
  }

  getPeer(): string {
    return "fake";
  }
  getCallNumber(): number {
    return 0;
  }
  setCredentials(): void {}
  getAuthContext() {
    return null;
  }

  /** Runs the call through the chain inside its context and ends it with the outcome. */
  #run(): void {
    const ctx = this.#ctx;
    const m = this.method;
    if (!ctx || !m || this.#status) return;
    const streaming = m.info.kind === "client_streaming" || m.info.kind === "bidi_streaming";
    const call = streaming
      ? { method: m.info, ctx, request: emptyRequestOf(m.info), requests: new RequestStream(this.#incoming()) }
      : { method: m.info, ctx, request: this.#requests[0] ?? emptyRequestOf(m.info) };
    void runInContext(ctx, async () => {
      try {
        const result = await m.invoke(call);
        if ("message" in result) await this.#send(result.message);
        else {
          for await (const response of result.stream) {
            if (this.#status) return;
            await this.#send(response);
          }
        }
        this.#finish({ code: Code.OK, details: "", metadata: ctx.responseTrailer });
      } catch (error) {
        this.#fail(error);
      }
    });
  }

  /** The client's requests as the handler reads them; the end is the client's half-close. */
  async *#incoming(): AsyncGenerator<Message> {
    for (;;) {
      const next = this.#requests.shift();
      if (next) yield next;
      else if (this.#halfClosed || this.#status) return;
      else await new Promise<void>((resolve) => (this.#requestWaiter = resolve));
    }
  }

  #wakeRequests(): void {
    const wake = this.#requestWaiter;
    this.#requestWaiter = undefined;
    wake?.();
  }

  /** Queues a response; resolves once the client has read it (as a `yield` in a real server waits for the transport). */
  async #send(response: Message): Promise<void> {
    if (this.#status) return;
    this.#responses.push(Buffer.from(toBinary(this.method!.info.desc.output, response)));
    this.#deliver();
    while (this.#responses.length > 0 && !this.#status) await new Promise<void>((resolve) => (this.#readWaiter = resolve));
  }

  #deliver(): void {
    while (this.#reads > 0 && this.#responses.length > 0 && !this.#status) {
      this.#reads--;
      this.#sendHeader();
      this.#listener?.onReceiveMessage(this.#responses.shift());
    }
    const wake = this.#readWaiter;
    this.#readWaiter = undefined;
    wake?.();
  }

  #sendHeader(): void {
    if (this.#headerSent) return;
    this.#headerSent = true;
    this.#listener?.onReceiveMetadata(this.#ctx?.responseHeader ?? new Metadata());
  }

  /** Ends the call with the error as the server would send it (a plain Error becomes INTERNAL), aborting the handler. */
  #fail(error: unknown): void {
    if (this.#status) return;
    const ctx = this.#ctx;
    const extra = ctx ? (this.#headerSent ? [ctx.responseTrailer] : [ctx.responseHeader, ctx.responseTrailer]) : [];
    const status = toServiceError(error, ...extra) as Required<Pick<ServiceError, "code" | "details" | "metadata">>;
    ctx?.abort(error instanceof GrpcError ? error : new GrpcError(status.code, status.details));
    this.#finish(status);
  }

  #finish(status: StatusObject): void {
    if (this.#status) return;
    this.#status = status;
    clearTimeout(this.#timer);
    this.#wakeRequests();
    const wake = this.#readWaiter;
    this.#readWaiter = undefined;
    wake?.();
    if (status.code === Code.OK) this.#sendHeader();
    // Asynchronously, as grpc-js reports every status.
    process.nextTick(() => this.#listener?.onReceiveStatus(status));
  }
}
