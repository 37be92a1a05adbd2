import type { FastifyInstance } from "fastify";
import type { ServedService } from "../call/handlers.js";
import type { Config } from "../config/schema.js";
import { registerSwagger } from "../docs/routes.js";
import type { GatewayRoute } from "../gateway/routes.js";
import { registerMetricsRoute } from "../metrics/routes.js";
import type { ServerMetrics } from "../metrics/server-metrics.js";
import { registerProfilingRoutes } from "../profiling/routes.js";

/** What the operational endpoints may need to know about the service. */
export interface OpsContext {
  config: Config;
  services: readonly ServedService[];
  routes: readonly GatewayRoute[];
  /** Undefined when DISABLE_PROMETHEUS. */
  metrics: ServerMetrics | undefined;
  /** The HTTP port once it listens (HTTP_PORT may be 0); Swagger UI on the admin port points there. */
  httpPort?: () => number | undefined;
  /**
   * The routes go on the admin port (ADMIN_PORT set). Only there is the V8 heap snapshot served:
   * it holds every string in memory, secrets included.
   */
  adminPort: boolean;
  /** Queues start-up work readiness need not wait for (the Node process collectors), run once the app is ready. */
  afterReady?: (task: () => void) => void;
}

/**
 * The operational endpoints (/metrics, /swagger/, /debug/pprof/): on the admin port when
 * ADMIN_PORT is set, else on the HTTP port. Each concern registers its own routes here.
 * Returns the path prefixes served, for the start-up warning when they are public.
 */
export function registerOpsRoutes(app: FastifyInstance, ctx: OpsContext): string[] {
  const served: string[] = [];
  if (registerMetricsRoute(app, ctx)) served.push("/metrics");
  registerSwagger(app, ctx);
  served.push("/swagger/", "/openapi/");
  if (registerProfilingRoutes(app, ctx)) served.push("/debug/pprof/");
  return served;
}
