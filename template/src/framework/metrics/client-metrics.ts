import type { DescMethod } from "@bufbuild/protobuf";
import type { Registry } from "prom-client";
import type { Config } from "../config/schema.js";
import { type CallFamilies, CallStats, callFamilies, GRPC_LABELS, type GrpcLabels, grpcLabels } from "./call-stats.js";
import { CounterFamily, type CounterSeries } from "./families.js";

/** One called method's series; the outbound client looks them up once, when it is created. */
export class ClientMethodStats extends CallStats {
  /** Attempts beyond the first: UNAVAILABLE answers grpc-js retried with back-off. */
  readonly retries: CounterSeries;

  constructor(families: ClientFamilies, labels: GrpcLabels) {
    super(families, labels);
    this.retries = families.retries.series(...labels);
  }
}

interface ClientFamilies extends CallFamilies {
  retries: CounterFamily;
}

/**
 * Metrics of the calls this process makes to other services (go-grpc-prometheus' `grpc_client_*`,
 * labelled like the server's by the called service and method, plus `grpc_client_retries_total`),
 * in the service's registry. The latency histogram follows the same switch and buckets as the server's.
 */
export class ClientMetrics {
  readonly #families: ClientFamilies;
  readonly #methods = new Map<string, ClientMethodStats>();

  constructor(registry: Registry, config: Pick<Config, "ENABLE_PROMETHEUS_GRPC_HISTOGRAM" | "PROMETHEUS_GRPC_HISTOGRAM_BUCKETS">) {
    this.#families = {
      ...callFamilies(registry, "client", config),
      retries: new CounterFamily(
        "grpc_client_retries_total",
        "Total number of retry attempts made by the client after an UNAVAILABLE answer.",
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
