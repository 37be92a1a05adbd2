import { authInterceptor } from "../auth/auth.js";
import type { Config } from "../config/schema.js";
import type { ErrorReporter } from "../errors/reporter.js";
import { createServerMetrics, type ServerMetrics } from "../metrics/server-metrics.js";
import type { ServiceImpl } from "../server/service.js";
import { debugLog } from "./debug-log.js";
import { errorNotification } from "./error-notification.js";
import { grpcMetrics } from "./metrics.js";
import { rateLimit } from "./rate-limit.js";
import { recovery } from "./recovery.js";
import { responseTimeLog } from "./response-time.js";
import { defaultTimeout } from "./timeout.js";
import { traceId } from "./trace-id.js";
import { tracing } from "./tracing.js";
import type { Interceptor, MethodInfo, Next } from "./types.js";
import { validate } from "./validate.js";

export interface NamedInterceptor {
  readonly name: string;
  readonly interceptor: Interceptor;
}

/** What the interceptors need beyond the configuration, made once at start-up. */
export interface ChainDeps {
  reporter: ErrorReporter;
  /** OpenTelemetry is exporting spans (an OTLP endpoint is configured). */
  tracing: boolean;
  /** The served services: those with an `authorize` override decide auth for their own methods. */
  services?: readonly ServiceImpl[];
  /** The process's metrics; made from the config when absent (none when DISABLE_PROMETHEUS). */
  metrics?: ServerMetrics;
}

/**
 * THE chain, outermost first. Every call runs through it exactly once, whether it
 * came over gRPC or through the HTTP gateway, unary or streaming. Custom interceptors
 * added with `Chain.prepend` run before all of these.
 */
export function defaultInterceptors(config: Config, deps: ChainDeps): NamedInterceptor[] {
  // Absent when JWT_SECRET and API_KEYS are unset and no service has an auth override.
  const auth = authInterceptor(config, deps.services);
  const metrics = deps.metrics ?? createServerMetrics(config);
  const chain: (NamedInterceptor | false | undefined)[] = [
    auth && { name: "auth", interceptor: auth },
    { name: "timeout", interceptor: defaultTimeout(config.GRPC_SERVER_DEFAULT_TIMEOUT_IN_SECONDS) },
    { name: "rateLimit", interceptor: rateLimit(config.RATE_LIMIT_PER_SECOND, config.RATE_LIMIT_BURST, metrics?.onRateLimited) },
    { name: "responseTimeLog", interceptor: responseTimeLog(config.RESPONSE_TIME_LOG_ERROR_ONLY) },
    { name: "traceId", interceptor: traceId(config.TRACE_HEADER_NAME) },
    !config.DISABLE_DEBUG_LOG_INTERCEPTOR && { name: "debugLog", interceptor: debugLog(config.DEBUG_LOG_HEADER_NAME) },
    !config.DISABLE_PROTO_VALIDATE && { name: "validate", interceptor: validate() },
    metrics && { name: "metrics", interceptor: grpcMetrics(metrics) },
    { name: "errorNotification", interceptor: errorNotification(deps.reporter) },
    deps.tracing && { name: "tracing", interceptor: tracing() },
    { name: "recovery", interceptor: recovery },
  ];
  return chain.filter((entry) => entry !== false && entry !== undefined);
}

/** The ordered interceptor list: open for prepending during initialisation, frozen once serving starts. */
export class Chain {
  #custom: NamedInterceptor[] = [];
  #frozen = false;
  readonly #defaults: NamedInterceptor[];

  constructor(defaults: NamedInterceptor[]) {
    this.#defaults = defaults;
  }

  /** Adds interceptors in front of the default chain (first argument outermost). Only before start-up completes. */
  prepend(...interceptors: NamedInterceptor[]): void {
    if (this.#frozen) throw new Error("interceptors can only be added during initialisation (before the servers start)");
    this.#custom = [...interceptors, ...this.#custom];
  }

  /** Names in call order, outermost first. */
  names(): string[] {
    return this.entries().map((e) => e.name);
  }

  entries(): NamedInterceptor[] {
    return [...this.#custom, ...this.#defaults];
  }

  /** Composes the chain around one method's handler; done once per method at start-up. */
  compose(method: MethodInfo, handler: Next): Next {
    this.#frozen = true;
    return this.entries().reduceRight<Next>((next, { interceptor }) => {
      const step = interceptor(next, method);
      return step === next ? next : rejecting(step);
    }, rejecting(handler));
  }
}

/**
 * Interceptors that need no `await` are plain functions (each async layer costs a promise per call) and
 * may throw; this turns such a throw into a rejection, so every `next` an interceptor calls returns a
 * promise and never throws.
 */
function rejecting(next: Next): Next {
  return (call) => {
    try {
      return next(call);
    } catch (err) {
      return Promise.reject(err);
    }
  };
}
