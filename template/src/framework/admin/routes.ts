import type { FastifyInstance } from "fastify";
import type { Config } from "../config/schema.js";
import { registerSwagger } from "../docs/routes.js";
import type { GatewayRoute } from "../gateway/routes.js";
import { registerMetricsRoute } from "../metrics/routes.js";
import type { ServerMetrics } from "../metrics/server-metrics.js";
import { registerProfilingRoutes } from "../profiling/routes.js";
import type { ServiceImpl } from "../server/service.js";

/** What the operational endpoints may need to know about the service. */
export interface OpsContext {
  config: Config;
  services: readonly ServiceImpl[];
  routes: readonly GatewayRoute[];
  /** Undefined when DISABLE_PROMETHEUS. */
  metrics: ServerMetrics | undefined;
}

/**
 * The operational endpoints (/metrics, /swagger/, /debug/pprof/): on the admin port when
 * ADMIN_PORT is set, else on the HTTP port. Each concern registers its own routes here.
 */
export function registerOpsRoutes(app: FastifyInstance, ctx: OpsContext): void {
  registerProfilingRoutes(app, ctx);
  registerMetricsRoute(app, ctx);
  registerSwagger(app, ctx);
}
