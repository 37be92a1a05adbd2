import { format } from "node:util";
import { setLogger } from "@grpc/grpc-js";
import { rootLogger } from "../logging/logger.js";

/** grpc-js's own line when a port cannot be bound; listenGrpc reports the same failure, naming the setting. */
const BIND_FAILURE = /^No address added out of total \d+ resolved/;

/**
 * grpc-js writes its errors (and, with GRPC_VERBOSITY / GRPC_TRACE, its traces) to stderr as plain text, which a
 * log pipeline reading JSON lines cannot parse. This sends them through the service's logger, tagged
 * `component: "grpc-js"`. grpc-js still decides what to write: its info and debug lines are written at info, so
 * GRPC_TRACE shows whatever LOG_LEVEL is.
 */
export function routeGrpcJsLogs(): void {
  const write =
    (level: "error" | "info") =>
    (message?: unknown, ...rest: unknown[]) => {
      const text = format(message, ...rest);
      if (level === "error" && BIND_FAILURE.test(text)) return;
      rootLogger()[level]({ component: "grpc-js" }, text);
    };
  setLogger({ error: write("error"), info: write("info"), debug: write("info") });
}
