import { InterceptingCall, type InterceptingListener, type Interceptor, Metadata, type StatusObject } from "@grpc/grpc-js";
import type { Logger } from "pino";
import { currentContext } from "../call/context.js";
import { Code, codeName } from "../call/status.js";
import type { CounterSeries } from "../metrics/families.js";
import type { AdaptiveThrottle } from "./adaptive-throttle.js";
import { attemptsOf } from "./attempts.js";

export interface ThrottleTarget {
  /** The method's throttle; undefined: the breaker is off (calls are only logged). */
  throttle: AdaptiveThrottle | undefined;
  /** Where local rejections are counted (`grpc_client_rejected_total`), if anywhere. */
  rejected: CounterSeries | undefined;
  /** "inventory.v1.InventoryService/GetStock" */
  path: string;
  /** The address dialled: "dns:///inventory:9090". */
  dependency: string;
  /** The process's logger, for the throttle's state changes. */
  log: Logger | undefined;
}

/**
 * The interceptor of one method of one client: rejects calls locally while the adaptive throttle says so (no
 * connection, no timer, no request: a status on the next tick), records the outcome of the others, logs when the
 * throttle starts and stops rejecting, and, when the current call is in debug mode, one line per outbound call
 * saying which dependency, method, code and attempts.
 */
export function throttleInterceptor(target: ThrottleTarget): Interceptor {
  const { throttle, rejected, path, dependency, log } = target;
  const details = `${path} not called: ${dependency} has been failing, and the client's breaker rejects calls to it locally for now`;
  let rejecting = false;
  return (options, nextCall) => {
    const ctx = currentContext();
    if (throttle) {
      if (throttle.reject()) {
        if (rejected) rejected.value++;
        if (!rejecting) {
          rejecting = true;
          log?.warn(
            { dependency, method: path, reject_probability: round(throttle.rejectProbability()) },
            "outbound calls rejected locally: dependency failing",
          );
        }
        if (ctx?.debug) ctx.logger.debug({ dependency, method: path, code: "Unavailable", attempts: 0 }, "outbound call rejected locally");
        return new InterceptingCall(new RejectedCall(details));
      }
      if (rejecting && throttle.rejectProbability() === 0) {
        rejecting = false;
        log?.info({ dependency, method: path }, "outbound calls let through again: dependency answering");
      }
    }
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
  constructor(private readonly details: string) {}
  start(_metadata: Metadata, listener?: Partial<InterceptingListener>): void {
    const status: StatusObject = { code: Code.UNAVAILABLE, details: this.details, metadata: new Metadata() };
    rejectedLocally.add(status.metadata);
    // On the next tick, as grpc-js reports every status: the caller attaches its listeners after starting.
    process.nextTick(() => listener?.onReceiveStatus?.(status));
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
