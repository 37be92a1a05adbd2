import { InterceptingCall, type Interceptor, type Metadata } from "@grpc/grpc-js";
import type { ClientMethodStats } from "../metrics/client-metrics.js";

/** Set by grpc-js on the response metadata of a call it retried: how many attempts came before the one that answered. */
const PREVIOUS_ATTEMPTS = "grpc-previous-rpc-attempts";

/**
 * A grpc-js interceptor counting one method's calls into its pre-resolved series: started,
 * messages each way, retries, handled by code and, with the histogram on, the latency.
 * It sits above grpc-js' retries, so a retried call counts once, its extra attempts in `retries`.
 */
export function metricsInterceptor(stats: ClientMethodStats): Interceptor {
  const timed = stats.duration !== undefined;
  return (options, nextCall) => {
    stats.started.value++;
    const start = timed ? performance.now() : 0;
    let retries = 0;
    return new InterceptingCall(nextCall(options), {
      start(metadata, _listener, next) {
        next(metadata, {
          onReceiveMetadata(headers, nextHeaders) {
            retries = previousAttempts(headers);
            nextHeaders(headers);
          },
          onReceiveMessage(message, nextMessage) {
            // grpc-js hands unary calls that got no message a null one before their status.
            if (message !== null) stats.received.value++;
            nextMessage(message);
          },
          onReceiveStatus(status, nextStatus) {
            // A trailers-only answer (how failed attempts end) carries the count in its trailers.
            stats.retries.value += retries || previousAttempts(status.metadata);
            stats.end(status.code, start);
            nextStatus(status);
          },
        });
      },
      sendMessage(message, next) {
        stats.sent.value++;
        next(message);
      },
    });
  };
}

function previousAttempts(metadata: Metadata): number {
  const value = metadata.get(PREVIOUS_ATTEMPTS)[0];
  return value === undefined ? 0 : Number(value) || 0;
}
