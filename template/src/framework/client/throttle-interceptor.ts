import { InterceptingCall, type InterceptingListener, type Interceptor, Metadata, type StatusObject } from "@grpc/grpc-js";
import type { Logger } from "pino";
import { currentContext } from "../call/context.js";
import { Code, codeName } from "../call/status.js";
import type { CounterSeries } from "../metrics/families.js";
import type { AdaptiveThrottle } from "./adaptive-throttle.js";
import { attemptsOf } from "./attempts.js";

export interface BreakerTarget {
  /** Where local rejections are counted (`grpc_client_rejected_total`), if anywhere. */
  rejected: CounterSeries | undefined;
  /** "inventory.v1.InventoryService/GetStock" */
  path: string;
  /** The address dialled: "dns:///inventory:9090". */
  dependency: string;
  /** The process's logger, for the throttle's state changes. */
  log: Logger | undefined;
}

/** One method's breaker: its adaptive throttle, and what a local rejection counts, logs and answers. */
export class MethodBreaker {
  readonly #details: string;
  readonly #message: string;
  #rejecting = false;

  constructor(
    readonly throttle: AdaptiveThrottle,
    private readonly target: BreakerTarget,
  ) {
    this.#details = `${target.path} not called: ${target.dependency} has been failing, and the client's breaker rejects calls to it locally for now`;
    this.#message = `${Code.UNAVAILABLE} UNAVAILABLE: ${this.#details}`;
  }

  /** Whether to fail this call locally; counted and, when the throttle starts or stops rejecting, logged. */
  rejects(): boolean {
    const { throttle, target } = this;
    if (throttle.reject()) {
      if (target.rejected) target.rejected.value++;
      if (!this.#rejecting) {
        this.#rejecting = true;
        target.log?.warn(
          { dependency: target.dependency, method: target.path, reject_probability: round(throttle.rejectProbability()) },
          "outbound calls rejected locally: dependency failing",
        );
      }
      const ctx = currentContext();
      if (ctx?.debug)
        ctx.logger.debug(
          { dependency: target.dependency, method: target.path, code: "Unavailable", attempts: 0 },
          "outbound call rejected locally",
        );
      return true;
    }
    if (this.#rejecting && throttle.rejectProbability() === 0) {
      this.#rejecting = false;
      target.log?.info({ dependency: target.dependency, method: target.path }, "outbound calls let through again: dependency answering");
    }
    return false;
  }

  /** The status of a call rejected locally (its metadata marked, so the metrics count no attempt). */
  status(): StatusObject {
    const status: StatusObject = { code: Code.UNAVAILABLE, details: this.#details, metadata: new Metadata() };
    rejectedLocally.add(status.metadata);
    return status;
  }

  /**
   * The error a call rejected locally fails with: grpc-js's shape (code, details, metadata), its message grpc-js's.
   * Without a stack: capturing one is most of a rejection's cost (~10 of ~11 µs), and the message says it all.
   */
  error(): Error & StatusObject {
    const limit = Error.stackTraceLimit;
    Error.stackTraceLimit = 0;
    const error = new Error(this.#message);
    Error.stackTraceLimit = limit;
    return Object.assign(error, this.status());
  }
}

export interface ThrottleTarget {
  /** The method's breaker; undefined: the breaker is off (calls are only logged). */
  breaker: MethodBreaker | undefined;
  /** Whether this interceptor decides rejections (streams); unary calls are rejected before grpc-js, by the client. */
  rejectHere: boolean;
  path: string;
  dependency: string;
}

/**
 * The interceptor of one method of one client: rejects stream calls locally while the breaker says so (no
 * connection, no timer, no request: a status on the next tick), records every outcome in the throttle, and,
 * when the current call is in debug mode, logs one line per outbound call saying which dependency, method,
 * code and attempts.
 */
export function throttleInterceptor(target: ThrottleTarget): Interceptor {
  const { breaker, rejectHere, path, dependency } = target;
  const throttle = breaker?.throttle;
  return (options, nextCall) => {
    if (rejectHere && breaker?.rejects()) return new InterceptingCall(new RejectedCall(breaker.status()));
    const ctx = currentContext();
    if (!ctx?.debug) {
      if (!throttle) return new InterceptingCall(nextCall(options));
      return new InterceptingCall(nextCall(options), {
        start(metadata, _listener, next) {
          next(metadata, {
            onReceiveStatus(status, nextStatus) {
              throttle.record(status.code);
              nextStatus(status);
            },
          });
        },
      });
    }
    const start = performance.now();
    let attempts = 0;
    return new InterceptingCall(nextCall(options), {
      start(metadata, _listener, next) {
        next(metadata, {
          onReceiveMetadata(headers, nextHeaders) {
            attempts = attemptsOf(headers);
            nextHeaders(headers);
          },
          onReceiveStatus(status, nextStatus) {
            throttle?.record(status.code);
            ctx.logger.debug(
              {
                dependency,
                method: path,
                code: codeName(status.code),
                // A trailers-only answer (how failed attempts end) says it in its trailers.
                attempts: attempts || attemptsOf(status.metadata),
                took_ms: round(performance.now() - start),
              },
              "outbound call",
            );
            nextStatus(status);
          },
        });
      },
    });
  };
}

const round = (n: number) => Math.round(n * 1000) / 1000;

/** What an InterceptingCall wraps (grpc-js does not export the interface by name). */
type InterceptingCallInterface = ConstructorParameters<typeof InterceptingCall>[0];

/** The metadata of the statuses of calls rejected locally, so the metrics above count no attempt for them. */
export const rejectedLocally = new WeakSet<Metadata>();

/** A call that never leaves the process: it ends with the given status once started. */
class RejectedCall implements InterceptingCallInterface {
  constructor(private readonly status: StatusObject) {}
  start(_metadata: Metadata, listener?: Partial<InterceptingListener>): void {
    // On the next tick, as grpc-js reports every status: the caller attaches its listeners after starting.
    process.nextTick(() => listener?.onReceiveStatus?.(this.status));
  }
  cancelWithStatus(): void {}
  getPeer(): string {
    return "";
  }
  sendMessageWithContext(context: { callback?: (error?: Error) => void }): void {
    context.callback?.();
  }
  sendMessage(): void {}
  startRead(): void {}
  halfClose(): void {}
  getAuthContext() {
    return null;
  }
}
