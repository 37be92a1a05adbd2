import type { FastifyInstance } from "fastify";
import type { ServerMetrics } from "./server-metrics.js";

/**
 * `/metrics` in the Prometheus text format 0.0.4 (what `promtool check metrics` reads), unless
 * DISABLE_PROMETHEUS (then nothing is registered and the port answers 404 like any unknown path).
 * Starts the Node process collectors, which only matter when someone can scrape them. True when served.
 */
export function registerMetricsRoute(app: FastifyInstance, { metrics }: { metrics: ServerMetrics | undefined }): boolean {
  if (!metrics) return false;
  metrics.collectProcessMetrics();
  app.get("/metrics", async (_req, reply) => reply.type(metrics.contentType).send(await metrics.render()));
  return true;
}
