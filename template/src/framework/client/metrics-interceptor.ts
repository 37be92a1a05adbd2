import { InterceptingCall, type Interceptor } from "@grpc/grpc-js";
import { Code } from "../call/status.js";
import type { ClientMethodStats } from "../metrics/client-metrics.js";
import { previousAttempts } from "./attempts.js";
import { rejectedLocally } from "./throttle-interceptor.js";

/** A hedged method's policy, for counting its hedges. */
export interface Hedging {
  maxAttempts: number;
  delayMs: number;
}

/**
 * A grpc-js interceptor counting one method's calls into its pre-resolved series: started,
 * messages each way, attempts, retries, hedges, handled by code and, with the histogram on, the latency.
 * It sits above grpc-js' retries, so a retried call counts once, its extra attempts in `retries`
 * (grpc-js reports them exactly on the answer). grpc-js does not report the hedges it sent, only the
 * number of the one that won: a hedged call's hedges are counted as the larger of that and the hedging
 * timers due before the first answer (exact but for a timer and an answer due in the same millisecond).
 */
export function metricsInterceptor(stats: ClientMethodStats, hedging?: Hedging): Interceptor {
  const timed = stats.duration !== undefined || hedging !== undefined;
  return (options, nextCall) => {
    stats.started.value++;
    const start = timed ? performance.now() : 0;
    let before = -1;
    let answeredAt = 0;
    return new InterceptingCall(nextCall(options), {
      start(metadata, _listener, next) {
        next(metadata, {
          onReceiveMetadata(headers, nextHeaders) {
            before = previousAttempts(headers);
            if (hedging) answeredAt = performance.now();
            nextHeaders(headers);
          },
          onReceiveMessage(message, nextMessage) {
            // grpc-js hands unary calls that got no message a null one before their status.
            if (message !== null) stats.received.value++;
            nextMessage(message);
          },
          onReceiveStatus(status, nextStatus) {
            // A trailers-only answer (how failed attempts end) carries the count in its trailers.
            if (before < 0) before = previousAttempts(status.metadata);
            let extra = before;
            if (status.code === Code.UNAVAILABLE && rejectedLocally.has(status.metadata)) {
              extra = -1; // no attempt was made
            } else if (hedging) {
              const due = hedging.delayMs > 0 ? Math.floor(((answeredAt || performance.now()) - start) / hedging.delayMs) : Infinity;
              const hedges = Math.min(hedging.maxAttempts - 1, Math.max(before, due));
              stats.hedges.value += hedges;
              extra = hedges;
            } else {
              stats.retries.value += before;
            }
            stats.attempts.value += 1 + extra;
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
