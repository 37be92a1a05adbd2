import type { ServerResponse } from "node:http";
import type { FastifyRequest } from "fastify";
import { collectDefaultMetrics, Gauge, type Metric, Registry } from "prom-client";
import type { MethodInfo } from "../call/types.js";
import type { Config } from "../config/schema.js";
import { type OverloadGuard, SHED_REASONS, type ShedReason } from "../overload/guard.js";
import type { PartialMessageBudget } from "../overload/partial-messages.js";
import { type CallFamilies, CallStats, callFamilies, GRPC_LABELS, type GrpcLabels, grpcLabels } from "./call-stats.js";
import { ClientMetrics } from "./client-metrics.js";
import { CounterFamily, type CounterSeries, HistogramFamily, type HistogramSeries } from "./families.js";

const HTTP_LABELS = ["method", "route", "status_code"] as const;

/** The `route` label of gateway requests that matched no http rule (never the raw path: unbounded cardinality). */
export const UNMATCHED_ROUTE = "unmatched";
/** The status of a gateway request whose client went away before the response ended (nginx's and grpc-gateway's 499). */
export const CLIENT_CLOSED_REQUEST = 499;

const START = Symbol("request start");
type TimedResponse = ServerResponse & { [START]?: number };

/**
 * prom-client's default gauges that promtool's lint rejects (non-counters must not end in `_total`).
 * Nothing is lost: `sum(nodejs_active_handles)` etc. give the same totals from the per-type gauges.
 */
const PROMTOOL_REJECTED = ["nodejs_active_handles_total", "nodejs_active_requests_total", "nodejs_active_resources_total"];

/** One served method's series, looked up once when the chain is composed; the interceptor only adds to them. */
export class MethodStats extends CallStats {
  readonly rateLimited: CounterSeries;
  readonly labels: GrpcLabels;

  constructor(families: ServerFamilies, info: MethodInfo) {
    const labels: GrpcLabels = grpcLabels(info.desc);
    super(families, labels);
    this.labels = labels;
    this.rateLimited = families.rateLimited.series(...labels);
  }
}

interface ServerFamilies extends CallFamilies {
  rateLimited: CounterFamily;
}

/** A gateway route as its metrics see it: the HTTP method and the path template (the gateway's routes are these). */
export interface MeteredRoute {
  readonly httpMethod: string;
  readonly template: { readonly source: string };
}

interface HttpSeries {
  requests: CounterSeries;
  duration: HistogramSeries;
}

/** The series of one (HTTP method, route template), by status code. */
class RouteStats {
  readonly #byStatus = new Map<number, HttpSeries>();

  constructor(
    readonly method: string,
    readonly route: string,
    readonly families: { requests: CounterFamily; duration: HistogramFamily },
  ) {}

  series(status: number): HttpSeries {
    let s = this.#byStatus.get(status);
    if (!s) {
      const labels = [this.method, this.route, String(status)];
      s = { requests: this.families.requests.series(...labels), duration: this.families.duration.series(...labels) };
      this.#byStatus.set(status, s);
    }
    return s;
  }

  record(status: number, seconds: number): void {
    const s = this.series(status);
    s.requests.value++;
    s.duration.observe(seconds);
  }
}

/**
 * The service's metrics: gRPC server and outbound client metrics as go-grpc-prometheus
 * names them, HTTP gateway metrics by route template, rate-limit rejections and Node process metrics,
 * in a registry of their own (not prom-client's global one), so one process can run several
 * servers. A service adds its own metrics to `registry`.
 */
export class ServerMetrics {
  readonly registry = new Registry();
  /** `grpc_client_*` of the outbound clients made with `app.createClient` (or given `metrics: app.metrics.clients`). */
  readonly clients: ClientMetrics;
  readonly #grpc: ServerFamilies;
  readonly #http: { requests: CounterFamily; duration: HistogramFamily };
  readonly #methods = new Map<string, MethodStats>();
  readonly #routes = new Map<MeteredRoute, RouteStats>();
  readonly #unmatched = new Map<string, RouteStats>();
  readonly #unauthenticated: CounterFamily;
  /** `grpc_server_shed_total` by reason, every reason's series from start-up. */
  readonly #shed: Record<ShedReason, CounterSeries>;
  /** `grpc_server_connections_refused_total`, whose series are made as each port asks for its own. */
  readonly #connectionsRefused: CounterFamily;
  /** Rejection series by method path and reason, made on first use (a rejection is not the hot path). */
  readonly #rejections = new Map<string, CounterSeries>();
  #processMetrics = false;

  constructor(config: Pick<Config, "ENABLE_PROMETHEUS_GRPC_HISTOGRAM" | "PROMETHEUS_GRPC_HISTOGRAM_BUCKETS">) {
    const r = this.registry;
    const buckets = config.PROMETHEUS_GRPC_HISTOGRAM_BUCKETS;
    this.#grpc = {
      ...callFamilies(r, "server", config),
      rateLimited: new CounterFamily(
        "grpc_server_rate_limited_total",
        "Total number of RPCs rejected by the rate limiter (RESOURCE_EXHAUSTED) before reaching the handler.",
        GRPC_LABELS,
      ).registerIn(r),
    };
    this.#unauthenticated = new CounterFamily(
      "grpc_server_unauthenticated_total",
      "Total number of RPCs rejected by authentication (UNAUTHENTICATED), by reason: missing, invalid or repeated credentials, or the service's override.",
      [...GRPC_LABELS, "reason"],
    ).registerIn(r);
    const shed = new CounterFamily(
      "grpc_server_shed_total",
      "Total number of calls (gRPC and HTTP) refused by overload protection, by reason: event_loop_delay, event_loop_utilization or in_flight (before they were decoded), or partial_messages (a request message would have passed MAX_PARTIAL_MESSAGE_BYTES).",
      ["reason"],
    ).registerIn(r);
    this.#shed = Object.fromEntries(SHED_REASONS.map((reason) => [reason, shed.series(reason)])) as Record<ShedReason, CounterSeries>;
    this.#connectionsRefused = new CounterFamily(
      "grpc_server_connections_refused_total",
      "Total number of connections closed as soon as accepted because the port had its cap open (GRPC_MAX_CONNECTIONS, HTTP_MAX_CONNECTIONS), by port: grpc, http or admin.",
      ["port"],
    ).registerIn(r);
    this.clients = new ClientMetrics(r, config);
    this.#http = {
      requests: new CounterFamily(
        "http_server_requests_total",
        "Total number of HTTP gateway requests by method, route template and status code.",
        HTTP_LABELS,
      ).registerIn(r),
      duration: new HistogramFamily(
        "http_server_request_duration_seconds",
        "Histogram of HTTP gateway request durations (seconds) by method, route template and status code.",
        HTTP_LABELS,
        buckets,
      ).registerIn(r),
    };
  }

  /** The series of one method, created at 0 (handled for OK) on first request: the chain asks once per method at start-up. */
  method(info: MethodInfo): MethodStats {
    let stats = this.#methods.get(info.path);
    if (!stats) this.#methods.set(info.path, (stats = new MethodStats(this.#grpc, info)));
    return stats;
  }

  /** Auth's `onRejected`: counts a rejection of the method with this gRPC path, for this reason. */
  readonly onUnauthenticated = (path: string, reason: string): void => {
    const key = `${path} ${reason}`;
    let series = this.#rejections.get(key);
    if (!series) {
      const stats = this.#methods.get(path);
      if (!stats) return;
      this.#rejections.set(key, (series = this.#unauthenticated.series(...stats.labels, reason)));
    }
    series.value++;
  };

  /** The gRPC server's report of a call grpc-js refused before the handler ran (see server/grpc-rejections.ts). */
  readonly onRejectedBeforeHandler = (path: string, code: number): void => {
    this.#methods.get(path)?.refused(code);
  };

  /** Overload protection's report of a refused call. */
  readonly onShed = (reason: ShedReason): void => {
    this.#shed[reason].value++;
  };

  /** The counter of one port's refused connections, at 0 from now (a server asks once, when it is made). */
  connectionRefused(port: "grpc" | "http" | "admin"): () => void {
    const series = this.#connectionsRefused.series(port);
    return () => {
      series.value++;
    };
  }

  /** Adds `grpc_server_calls_in_flight` and the event-loop figures overload protection acts on, read at each scrape. */
  watchOverload(guard: OverloadGuard): void {
    const registers = [this.registry];
    new Gauge({
      name: "grpc_server_calls_in_flight",
      help: "Calls (gRPC and HTTP) accepted and not yet ended, as overload protection counts them against MAX_IN_FLIGHT_CALLS.",
      registers,
      collect() {
        this.set(guard.inFlight);
      },
    });
    if (!guard.sampling) return;
    new Gauge({
      name: "grpc_server_event_loop_delay_seconds",
      help: "Mean event-loop delay over overload protection's last 100 ms sample (compared with OVERLOAD_MAX_EVENT_LOOP_DELAY_MS).",
      registers,
      collect() {
        this.set(guard.eventLoopDelayMs / 1000);
      },
    });
    new Gauge({
      name: "grpc_server_event_loop_utilization",
      help: "Event-loop utilisation (0-1) over overload protection's last 100 ms sample (compared with OVERLOAD_MAX_EVENT_LOOP_UTILIZATION).",
      registers,
      collect() {
        this.set(guard.eventLoopUtilization);
      },
    });
  }

  /** Adds `grpc_server_partial_message_bytes`, read at each scrape. */
  watchPartialMessages(budget: PartialMessageBudget): void {
    new Gauge({
      name: "grpc_server_partial_message_bytes",
      help: "Bytes of request messages begun and not yet whole, held over every call (counted against MAX_PARTIAL_MESSAGE_BYTES).",
      registers: [this.registry],
      collect() {
        this.set(budget.held);
      },
    });
  }

  /** The rate limiter's `onReject`: counts a rejection of the method with this gRPC path. */
  readonly onRateLimited = (path: string): void => {
    const stats = this.#methods.get(path);
    if (stats) stats.rateLimited.value++;
  };

  /**
   * What the gateway tells about each of its requests (so /healthcheck, /readycheck and /metrics are
   * never counted). A request is counted once, when its response closes: with its status, or 499 when
   * the client left before the end (e.g. mid-stream), under the route template the gateway matched
   * (`req.gatewayRoute`). Every route's 200 series exists from start-up. The start time is kept on the
   * response: the gateway's one close listener per response reports it here, no closure per request.
   */
  gatewayObserver(routes: readonly MeteredRoute[]): {
    arrived(res: ServerResponse): void;
    closed(req: FastifyRequest, res: ServerResponse): void;
  } {
    for (const route of routes) this.#route(route).series(200);
    return {
      arrived: (res: TimedResponse) => {
        res[START] = performance.now();
      },
      closed: (req, res: TimedResponse) => {
        const route = req.gatewayRoute;
        const stats = route ? (this.#routes.get(route) ?? this.#route(route)) : this.#unmatchedRoute(req.method);
        // Ended and flushed, or the client left first (over HTTP/2 a reset stream reads as flushed, not as ended).
        const answered = res.writableEnded && res.writableFinished;
        stats.record(answered ? res.statusCode : CLIENT_CLOSED_REQUEST, (performance.now() - res[START]!) / 1000);
      },
    };
  }

  #route(route: MeteredRoute): RouteStats {
    let stats = this.#routes.get(route);
    if (!stats) this.#routes.set(route, (stats = new RouteStats(route.httpMethod, route.template.source, this.#http)));
    return stats;
  }

  #unmatchedRoute(method: string): RouteStats {
    let stats = this.#unmatched.get(method);
    if (!stats) this.#unmatched.set(method, (stats = new RouteStats(method, UNMATCHED_ROUTE, this.#http)));
    return stats;
  }

  /** Adds prom-client's Node process metrics (minus the three gauges promtool rejects). Idempotent. */
  collectProcessMetrics(): void {
    if (this.#processMetrics) return;
    this.#processMetrics = true;
    collectDefaultMetrics({ register: this.registry });
    for (const name of PROMTOOL_REJECTED) this.registry.removeSingleMetric(name);
  }

  /** The Prometheus text exposition (format 0.0.4). */
  render(): Promise<string> {
    return this.registry.metrics();
  }

  readonly contentType = Registry.PROMETHEUS_CONTENT_TYPE;

  /**
   * The same metrics in the OpenMetrics text format 1.0.0, the one that carries exemplars (the trace of a
   * latency bucket's last observation, with tracing on). prom-client renders a registry in one format, and
   * rendering OpenMetrics renames its counters in place (`_total` dropped from the metric's name); so a
   * registry of stand-ins, made per scrape from the registry's metrics as they are then, renders it and the
   * metrics themselves are left as they were.
   */
  renderOpenMetrics(): Promise<string> {
    // The types leave the constructor's content type out; prom-client takes it (and checks it).
    const om = new (Registry as unknown as new (type: string) => Registry)(Registry.OPENMETRICS_CONTENT_TYPE);
    for (const metric of this.registry.getMetricsAsArray() as unknown as Metric[]) om.registerMetric(standIn(metric));
    return om.metrics();
  }

  readonly openMetricsContentType = Registry.OPENMETRICS_CONTENT_TYPE;
}

/** A metric's stand-in for rendering: its own name (prom-client may change it), the metric's values. */
function standIn(metric: Metric): Metric {
  const m = metric as unknown as { name: string; help: string; type: string; aggregator: string; get(): Promise<{ name: string }> };
  const stand = {
    name: m.name,
    help: m.help,
    type: m.type,
    aggregator: m.aggregator,
    async get() {
      return { ...(await m.get()), name: stand.name };
    },
  };
  return stand as unknown as Metric;
}

/** The process's metrics, or undefined when DISABLE_PROMETHEUS=true (then nothing is measured or served). */
export function createServerMetrics(
  config: Pick<Config, "DISABLE_PROMETHEUS" | "ENABLE_PROMETHEUS_GRPC_HISTOGRAM" | "PROMETHEUS_GRPC_HISTOGRAM_BUCKETS">,
): ServerMetrics | undefined {
  return config.DISABLE_PROMETHEUS ? undefined : new ServerMetrics(config);
}
