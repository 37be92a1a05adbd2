import { authInterceptor } from "../auth/auth.js";
import type { RemoteKeySet } from "../auth/remote-keys.js";
import type { NamedInterceptor } from "../call/chain.js";
import type { Config } from "../config/schema.js";
import type { ErrorReporter } from "../errors/reporter.js";
import { debugLog } from "../interceptors/debug-log.js";
import { errorNotification } from "../interceptors/error-notification.js";
import { rateLimit } from "../interceptors/rate-limit.js";
import { recovery } from "../interceptors/recovery.js";
import { responseTimeLog } from "../interceptors/response-time.js";
import type { HttpStreams } from "../interceptors/shutdown-streams.js";
import { defaultTimeout } from "../interceptors/timeout.js";
import { traceId } from "../interceptors/trace-id.js";
import { tracing } from "../interceptors/tracing.js";
import { validate } from "../interceptors/validate.js";
import type { ServerMetrics } from "../metrics/server-metrics.js";
import type { ServiceImpl } from "./service.js";

/** What the interceptors need beyond the configuration, made once at start-up. */
export interface ChainDeps {
  reporter: ErrorReporter;
  /** OpenTelemetry is exporting spans (an OTLP endpoint is configured). */
  tracing: boolean;
  /** The served services: those with an `authorize` override decide auth for their own methods. */
  services?: readonly ServiceImpl[];
  /** The process's metrics, for the rejection counts of auth and the rate limiter (none when DISABLE_PROMETHEUS). */
  metrics?: ServerMetrics;
  /** Queues work that makes first calls quicker but that readiness need not wait for: run once the app is ready. */
  afterReady?: (task: () => void) => void;
  /** The identity provider's key set (JWT_JWKS_URL or JWT_OIDC_ISSUER), when one is configured. */
  keys?: RemoteKeySet;
  /** The HTTP port's streams running in this process, which shutdown ends with UNAVAILABLE when its budget runs out. */
  httpStreams?: HttpStreams;
}

/**
 * THE chain, outermost first. Every call runs through it exactly once, whether it
 * came over gRPC or through the HTTP gateway, unary or streaming. Custom interceptors
 * added with `Chain.prepend` run before all of these. The gRPC metrics are not in the list:
 * they wrap the whole chain (the Chain's `around`), so calls it rejects are counted too.
 */
export function defaultInterceptors(config: Config, deps: ChainDeps): NamedInterceptor[] {
  // Absent when no credential source is set and no service has an auth override.
  const auth = authInterceptor(config, deps.services, deps.metrics?.onUnauthenticated, deps.keys);
  const chain: (NamedInterceptor | false | undefined)[] = [
    // First: every call gets its span, and every log line of it the span's IDs.
    deps.tracing && { name: "tracing", interceptor: tracing() },
    auth && { name: "auth", interceptor: auth },
    { name: "timeout", interceptor: defaultTimeout(config.GRPC_SERVER_DEFAULT_TIMEOUT_IN_SECONDS, deps.httpStreams) },
    deps.httpStreams && { name: "shutdownStreams", interceptor: deps.httpStreams.interceptor },
    { name: "rateLimit", interceptor: rateLimit(config.RATE_LIMIT_PER_SECOND, config.RATE_LIMIT_BURST, deps.metrics?.onRateLimited) },
    { name: "responseTimeLog", interceptor: responseTimeLog(config.RESPONSE_TIME_LOG_ERROR_ONLY) },
    { name: "traceId", interceptor: traceId(config.TRACE_HEADER_NAME) },
    !config.DISABLE_DEBUG_LOG_INTERCEPTOR && { name: "debugLog", interceptor: debugLog(config.DEBUG_LOG_HEADER_NAME) },
    !config.DISABLE_PROTO_VALIDATE && { name: "validate", interceptor: validate({ warmUp: deps.afterReady }) },
    { name: "errorNotification", interceptor: errorNotification(deps.reporter) },
    { name: "recovery", interceptor: recovery },
  ];
  return chain.filter((entry) => entry !== false && entry !== undefined);
}
