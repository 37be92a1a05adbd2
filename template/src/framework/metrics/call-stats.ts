import type { DescMethod } from "@bufbuild/protobuf";
import type { Registry } from "prom-client";
import { Code, codeName } from "../call/status.js";
import type { Config } from "../config/schema.js";
import { CounterFamily, type CounterSeries, HistogramFamily, type HistogramSeries } from "./families.js";

export const GRPC_LABELS = ["grpc_type", "grpc_service", "grpc_method"] as const;

/** The `grpc_type` label of a method kind, as go-grpc-prometheus spells it. */
export type GrpcType = "unary" | "client_stream" | "server_stream" | "bidi_stream";

const GRPC_TYPES: Record<DescMethod["methodKind"], GrpcType> = {
  unary: "unary",
  client_streaming: "client_stream",
  server_streaming: "server_stream",
  bidi_streaming: "bidi_stream",
};

/** The labels of a method described by protobuf-es. */
export function grpcLabels(method: DescMethod): GrpcLabels {
  return [GRPC_TYPES[method.methodKind], method.parent.typeName, method.name];
}

/** Labels of one method, in `GRPC_LABELS` order. */
export type GrpcLabels = readonly [GrpcType, string, string];

/** The go-grpc-prometheus families of one side of a call (`grpc_server_*` or `grpc_client_*`). */
export interface CallFamilies {
  started: CounterFamily;
  handled: CounterFamily;
  received: CounterFamily;
  sent: CounterFamily;
  /** Undefined when ENABLE_PROMETHEUS_GRPC_HISTOGRAM=false. */
  duration: HistogramFamily | undefined;
}

const HELP = {
  server: {
    started: "Total number of RPCs started on the server.",
    handled: "Total number of RPCs completed on the server, regardless of success or failure.",
    received: "Total number of RPC stream messages received on the server.",
    sent: "Total number of gRPC stream messages sent by the server.",
    duration: "Histogram of response latency (seconds) of gRPC that had been application-level handled by the server.",
  },
  client: {
    started: "Total number of RPCs started on the client.",
    handled: "Total number of RPCs completed by the client, regardless of success or failure.",
    received: "Total number of RPC stream messages received by the client.",
    sent: "Total number of gRPC stream messages sent by the client.",
    duration: "Histogram of response latency (seconds) of the gRPC until it is finished by the application.",
  },
};

/** Registers `grpc_<side>_started_total`, `_handled_total`, `_msg_received_total`, `_msg_sent_total` and `_handling_seconds`. */
export function callFamilies(
  registry: Registry,
  side: "server" | "client",
  config: Pick<Config, "ENABLE_PROMETHEUS_GRPC_HISTOGRAM" | "PROMETHEUS_GRPC_HISTOGRAM_BUCKETS">,
): CallFamilies {
  const help = HELP[side];
  const prefix = `grpc_${side}`;
  return {
    started: new CounterFamily(`${prefix}_started_total`, help.started, GRPC_LABELS).registerIn(registry),
    handled: new CounterFamily(`${prefix}_handled_total`, help.handled, [...GRPC_LABELS, "grpc_code"]).registerIn(registry),
    received: new CounterFamily(`${prefix}_msg_received_total`, help.received, GRPC_LABELS).registerIn(registry),
    sent: new CounterFamily(`${prefix}_msg_sent_total`, help.sent, GRPC_LABELS).registerIn(registry),
    duration: config.ENABLE_PROMETHEUS_GRPC_HISTOGRAM
      ? new HistogramFamily(`${prefix}_handling_seconds`, help.duration, GRPC_LABELS, config.PROMETHEUS_GRPC_HISTOGRAM_BUCKETS).registerIn(
          registry,
        )
      : undefined,
  };
}

/**
 * One method's series on one side, looked up once (when the chain is composed, or the client
 * created), so a call only adds to them. Every series but the non-OK handled ones exists at 0
 * from then on.
 */
export class CallStats {
  readonly started: CounterSeries;
  readonly received: CounterSeries;
  readonly sent: CounterSeries;
  /** Handled counters by numeric code; OK exists from the start, the others appear on first use. */
  readonly handled: (CounterSeries | undefined)[] = new Array(17).fill(undefined);
  /** Undefined when ENABLE_PROMETHEUS_GRPC_HISTOGRAM=false. */
  readonly duration: HistogramSeries | undefined;
  readonly #labels: GrpcLabels;
  readonly #handledFamily: CounterFamily;

  constructor(families: CallFamilies, labels: GrpcLabels) {
    this.#labels = labels;
    this.#handledFamily = families.handled;
    this.started = families.started.series(...labels);
    this.received = families.received.series(...labels);
    this.sent = families.sent.series(...labels);
    this.duration = families.duration?.series(...labels);
    this.handled[Code.OK] = families.handled.series(...labels, codeName(Code.OK));
  }

  /** Counts the end of a call with its status code; `start` is its `performance.now()` (ignored without the histogram). */
  end(code: number, start: number): void {
    (this.handled[code] ?? this.#handledSeries(code)).value++;
    if (this.duration !== undefined) this.duration.observe((performance.now() - start) / 1000);
  }

  /** `end`, with the call's trace as the latency bucket's exemplar (tracing on; without a span, as `end`). */
  endWithExemplar(code: number, start: number, traceId: unknown, spanId: unknown): void {
    (this.handled[code] ?? this.#handledSeries(code)).value++;
    if (this.duration === undefined) return;
    const seconds = (performance.now() - start) / 1000;
    if (typeof traceId === "string" && typeof spanId === "string") this.duration.observeWithExemplar(seconds, traceId, spanId);
    else this.duration.observe(seconds);
  }

  /**
   * Counts a call the transport refused before it reached the handler (an undecodable or oversized
   * request): started and handled with its code. No latency: nothing was handled.
   */
  refused(code: number): void {
    this.started.value++;
    (this.handled[code] ?? this.#handledSeries(code)).value++;
  }

  #handledSeries(code: number): CounterSeries {
    const known = Number.isInteger(code) && code >= 0 && code <= 16 ? code : Code.UNKNOWN;
    return (this.handled[known] ??= this.#handledFamily.series(...this.#labels, codeName(known)));
  }
}
