import type { Config } from "../config/schema.js";

export interface ServiceUrls {
  /** Base of the REST/JSON gateway (and the health checks, SSE, gRPC-Web, Connect). */
  rest: string;
  /** Where gRPC clients dial: `host:port` (TLS when `grpcTls`). */
  grpc: string;
  swaggerUi?: string;
  metrics?: string;
  pprof?: string;
}

/**
 * The addresses a developer wants at hand once the service is ready, for the "ready" log line: the ones to
 * open or dial, on the port that serves them (the operational routes move to the admin port when it is set).
 */
export function serviceUrls(config: Config, host: string, ports: { grpc: number; http: number; admin: number | undefined }): ServiceUrls {
  const h = host.includes(":") ? `[${host}]` : host;
  const rest = `${config.HTTP_TLS_CERT_FILE === undefined ? "http" : "https"}://${h}:${ports.http}`;
  const ops = ports.admin === undefined ? rest : `http://${h}:${ports.admin}`;
  const urls: ServiceUrls = { rest, grpc: `${h}:${ports.grpc}`, swaggerUi: `${ops}/swagger/` };
  if (!config.DISABLE_PROMETHEUS) urls.metrics = `${ops}/metrics`;
  if (!config.DISABLE_DEBUG) urls.pprof = `${ops}/debug/pprof/`;
  return urls;
}
