import type { FastifyInstance } from "fastify";
import type { ServerMetrics } from "./server-metrics.js";

/**
 * Whether an Accept header prefers OpenMetrics to the Prometheus text format: it lists
 * `application/openmetrics-text` with a weight at least that of `text/plain` (Prometheus sends
 * `application/openmetrics-text;version=1.0.0,…,text/plain;version=0.0.4;q=0.5,*\/*;q=0.1`).
 */
export function wantsOpenMetrics(accept: string | undefined): boolean {
  if (accept === undefined || !accept.includes("application/openmetrics-text")) return false;
  let om = -1;
  let text = -1;
  for (const part of accept.split(",")) {
    const [type = "", ...params] = part.split(";").map((p) => p.trim().toLowerCase());
    const q = Number(params.find((p) => p.startsWith("q="))?.slice(2) ?? "1");
    const weight = Number.isFinite(q) ? q : 0;
    if (type === "application/openmetrics-text") om = Math.max(om, weight);
    else if (type === "text/plain") text = Math.max(text, weight);
  }
  return om > 0 && om >= text;
}

/**
 * `/metrics` in the Prometheus text format 0.0.4 (what `promtool check metrics` reads), or OpenMetrics 1.0.0
 * for a scraper that asks for it (with exemplars on the gRPC latency histogram when tracing is on), unless
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
  app.get("/metrics", async (req, reply) => {
    collect(); // idempotent: a flag check once the collectors run
    // Prometheus asks for OpenMetrics first (its default Accept), the format with exemplars.
    if (wantsOpenMetrics(req.headers.accept)) {
      return reply.type(metrics.openMetricsContentType).send(await metrics.renderOpenMetrics());
    }
    return reply.type(metrics.contentType).send(await metrics.render());
  });
  return true;
}
