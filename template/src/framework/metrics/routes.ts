import type { FastifyInstance } from "fastify";
import type { ServerMetrics } from "./server-metrics.js";

/**
 * `/metrics` in the Prometheus text format 0.0.4 (what `promtool check metrics` reads), unless
 * DISABLE_PROMETHEUS (then nothing is registered and the port answers 404 like any unknown path).
 * Starts the Node process collectors, which only matter when someone can scrape them: by `afterReady` when
 * given (once the app is ready: they are not needed to get there), else at once, and in any case by the first
 * scrape, so that every scrape lists them. True when served.
 */
export function registerMetricsRoute(
  app: FastifyInstance,
  { metrics, afterReady }: { metrics: ServerMetrics | undefined; afterReady?: (task: () => void) => void },
): boolean {
  if (!metrics) return false;
  const collect = () => metrics.collectProcessMetrics();
  if (afterReady) afterReady(collect);
  else collect();
  app.get("/metrics", async (_req, reply) => {
    collect(); // idempotent: a flag check once the collectors run
    return reply.type(metrics.contentType).send(await metrics.render());
  });
  return true;
}
