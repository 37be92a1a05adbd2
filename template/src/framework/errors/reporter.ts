import type { Code } from "../call/status.js";
import { rootLogger } from "../logging/logger.js";

/** A server-side failure worth a human's attention, with what is needed to find it in the logs. */
export interface ErrorReport {
  error: unknown;
  code: Code;
  /** gRPC path, e.g. `/example.v1.ExampleService/Echo`. */
  method: string;
  traceId: string;
  /** The call's log fields (trace, grpcMethod, httpPath and whatever the handler added). */
  fields: Readonly<Record<string, unknown>>;
}

/** Where error reports go. Reporting is fire-and-forget: it never delays or fails a response. */
export interface ErrorReporter {
  report(report: ErrorReport): void | Promise<void>;
  /** Sends what is still queued; called on shutdown. */
  flush?(timeoutMs: number): Promise<void>;
}

/** The default reporter: one error-level log line with the trace ID and the stack. */
export const logReporter: ErrorReporter = {
  report({ error, code, fields }) {
    rootLogger().error({ ...fields, err: error, grpcCode: code }, "server error reported");
  },
};

/**
 * The configured reporter: Sentry when SENTRY_DSN is set (its client is loaded on the first
 * report, so it costs nothing at start-up), else the log reporter.
 */
export function createReporter(sentryDsn: string | undefined, release: string): ErrorReporter {
  if (!sentryDsn) return logReporter;
  let sentry: Promise<ErrorReporter> | undefined;
  const load = () => (sentry ??= import("./sentry.js").then((m) => m.sentryReporter(sentryDsn, release)));
  return {
    async report(report) {
      logReporter.report(report);
      (await load()).report(report);
    },
    async flush(timeoutMs) {
      if (sentry) await (await sentry).flush?.(timeoutMs);
    },
  };
}
