import type { Config } from "../config/schema.js";
import { debugLog } from "./debug-log.js";
import { rateLimit } from "./rate-limit.js";
import { recovery } from "./recovery.js";
import { responseTimeLog } from "./response-time.js";
import { defaultTimeout } from "./timeout.js";
import { traceId } from "./trace-id.js";
import type { Interceptor, MethodInfo, Next } from "./types.js";
import { validate } from "./validate.js";

export interface NamedInterceptor {
  readonly name: string;
  readonly interceptor: Interceptor;
}

/**
 * THE chain, outermost first. Every call runs through it exactly once, whether it
 * came over gRPC or through the HTTP gateway, unary or streaming. Custom interceptors
 * added with `Chain.prepend` run before all of these.
 */
export function defaultInterceptors(config: Config): NamedInterceptor[] {
  const chain: (NamedInterceptor | false)[] = [
    { name: "timeout", interceptor: defaultTimeout(config.GRPC_SERVER_DEFAULT_TIMEOUT_IN_SECONDS) },
    { name: "rateLimit", interceptor: rateLimit(config.RATE_LIMIT_PER_SECOND, config.RATE_LIMIT_BURST) },
    { name: "responseTimeLog", interceptor: responseTimeLog(config.RESPONSE_TIME_LOG_ERROR_ONLY) },
    { name: "traceId", interceptor: traceId(config.TRACE_HEADER_NAME) },
    !config.DISABLE_DEBUG_LOG_INTERCEPTOR && { name: "debugLog", interceptor: debugLog(config.DEBUG_LOG_HEADER_NAME) },
    !config.DISABLE_PROTO_VALIDATE && { name: "validate", interceptor: validate() },
    { name: "recovery", interceptor: recovery },
  ];
  return chain.filter((entry) => entry !== false);
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
    return this.entries().reduceRight<Next>((next, { interceptor }) => interceptor(next, method), handler);
  }
}
