import { rootLogger } from "../logging/logger.js";

export interface Tracing {
  /** Exports what is buffered and stops the provider; called on shutdown. */
  shutdown(): Promise<void>;
}

type Env = Record<string, string | undefined>;

/** True when the standard OTLP endpoint variables ask for traces. */
export function tracingEnabled(env: Env = process.env): boolean {
  return Boolean(env.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT || env.OTEL_EXPORTER_OTLP_ENDPOINT) && env.OTEL_TRACES_EXPORTER !== "none";
}

/**
 * Starts the OpenTelemetry SDK when an OTLP endpoint is configured (OTEL_EXPORTER_OTLP_ENDPOINT,
 * OTEL_EXPORTER_OTLP_PROTOCOL http/protobuf or http/json, OTEL_SERVICE_NAME…). The SDK is
 * imported only then, so a service without tracing loads and pays nothing for it.
 */
export async function setupTracing(serviceName: string, env: Env = process.env): Promise<Tracing | undefined> {
  if (!tracingEnabled(env)) return undefined;
  const protocol = env.OTEL_EXPORTER_OTLP_TRACES_PROTOCOL ?? env.OTEL_EXPORTER_OTLP_PROTOCOL ?? "http/protobuf";
  const [{ NodeTracerProvider, BatchSpanProcessor }, { resourceFromAttributes }, exporterModule] = await Promise.all([
    import("@opentelemetry/sdk-trace-node"),
    import("@opentelemetry/resources"),
    protocol === "http/json" ? import("@opentelemetry/exporter-trace-otlp-http") : import("@opentelemetry/exporter-trace-otlp-proto"),
  ]);
  if (protocol !== "http/json" && protocol !== "http/protobuf") {
    rootLogger().warn({ protocol }, "OTEL_EXPORTER_OTLP_PROTOCOL not supported here; using http/protobuf");
  }
  const provider = new NodeTracerProvider({
    resource: resourceFromAttributes({ "service.name": env.OTEL_SERVICE_NAME || serviceName }),
    spanProcessors: [new BatchSpanProcessor(new exporterModule.OTLPTraceExporter())],
  });
  // Registers the W3C trace-context propagator and an AsyncLocalStorage context manager.
  provider.register();
  rootLogger().info({ protocol }, "tracing: exporting spans over OTLP");
  return { shutdown: () => provider.shutdown() };
}
