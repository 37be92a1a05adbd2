import type { DescMethod } from "@bufbuild/protobuf";
import type { Registry } from "prom-client";
import type { Config } from "../config/schema.js";
import { type CallFamilies, CallStats, callFamilies, GRPC_LABELS, type GrpcLabels, grpcLabels } from "./call-stats.js";
import { CounterFamily, type CounterSeries } from "./families.js";

/** One called method's series; the outbound client looks them up once, when it is created. */
export class ClientMethodStats extends CallStats {
  /** Requests sent on the wire: first attempts, retries and hedges (a call rejected locally makes none). */
  readonly attempts: CounterSeries;
  /** Attempts beyond the first that grpc-js retried after a retryable code, with back-off. */
  readonly retries: CounterSeries;
  /** Attempts beyond the first of hedged methods. */
  readonly hedges: CounterSeries;
  /** Calls the adaptive throttle (breaker) failed UNAVAILABLE without sending them. */
  readonly rejected: CounterSeries;

  constructor(families: ClientFamilies, labels: GrpcLabels) {
    super(families, labels);
    this.attempts = families.attempts.series(...labels);
    this.retries = families.retries.series(...labels);
    this.hedges = families.hedges.series(...labels);
    this.rejected = families.rejected.series(...labels);
  }
}

interface ClientFamilies extends CallFamilies {
  attempts: CounterFamily;
  retries: CounterFamily;
  hedges: CounterFamily;
  rejected: CounterFamily;
}

/**
 * Metrics of the calls this process makes to other services (go-grpc-prometheus' `grpc_client_*`,
 * labelled like the server's by the called service (the dependency) and method, plus attempts, retries, hedges
 * and local rejections by the breaker),
 * in the service's registry. The latency histogram follows the same switch and buckets as the server's.
 */
export class ClientMetrics {
  readonly #families: ClientFamilies;
  readonly #methods = new Map<string, ClientMethodStats>();

  constructor(registry: Registry, config: Pick<Config, "ENABLE_PROMETHEUS_GRPC_HISTOGRAM" | "PROMETHEUS_GRPC_HISTOGRAM_BUCKETS">) {
    this.#families = {
      ...callFamilies(registry, "client", config),
      attempts: new CounterFamily(
        "grpc_client_attempts_total",
        "Total number of requests sent by the client: first attempts, retries and hedges.",
        GRPC_LABELS,
      ).registerIn(registry),
      retries: new CounterFamily(
        "grpc_client_retries_total",
        "Total number of retry attempts made by the client after a retryable answer (UNAVAILABLE by default).",
        GRPC_LABELS,
      ).registerIn(registry),
      hedges: new CounterFamily("grpc_client_hedges_total", "Total number of hedged attempts sent by the client.", GRPC_LABELS).registerIn(
        registry,
      ),
      rejected: new CounterFamily(
        "grpc_client_rejected_total",
        "Total number of calls the client's breaker (adaptive throttle) failed locally, without sending them.",
        GRPC_LABELS,
      ).registerIn(registry),
    };
  }

  /** The series of one method (created at 0, handled for OK); shared by every client of that service. */
  method(method: DescMethod): ClientMethodStats {
    const key = `${method.parent.typeName}/${method.name}`;
    let stats = this.#methods.get(key);
    if (!stats) this.#methods.set(key, (stats = new ClientMethodStats(this.#families, grpcLabels(method))));
    return stats;
  }
}
