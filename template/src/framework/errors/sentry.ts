import {
  type BaseTransportOptions,
  Client,
  type ClientOptions,
  createStackParser,
  createTransport,
  type Event,
  type EventHint,
  eventFromMessage,
  eventFromUnknownInput,
} from "@sentry/core";
import type { ErrorReporter } from "./reporter.js";

/** Parses V8 stack lines (`at fn (file:line:col)`) into Sentry frames. */
const v8Line = /^\s*at (?:(.+?) \()?(.+?):(\d+):(\d+)\)?$/;
const stackParser = createStackParser([
  50,
  (line) => {
    const m = v8Line.exec(line);
    if (!m) return undefined;
    const filename = m[2]!.replace(/^file:\/\//, "");
    return { function: m[1] ?? "?", filename, lineno: Number(m[3]), colno: Number(m[4]), in_app: !filename.includes("node_modules") };
  },
]);

/** A minimal server client on @sentry/core: no auto-instrumentation, no global hooks, just events. */
class ServiceClient extends Client<ClientOptions> {
  constructor(options: ClientOptions) {
    super(options);
  }
  eventFromException(exception: unknown, hint?: EventHint): PromiseLike<Event> {
    return Promise.resolve(eventFromUnknownInput(this, stackParser, exception, hint));
  }
  eventFromMessage(message: string, level?: Event["level"], hint?: EventHint): PromiseLike<Event> {
    return Promise.resolve(eventFromMessage(stackParser, message, level, hint));
  }
}

/** Reports to Sentry when SENTRY_DSN is set; events carry the trace ID, method and code as tags. */
export function sentryReporter(dsn: string, release: string): ErrorReporter {
  const client = new ServiceClient({
    dsn,
    release: release || undefined,
    integrations: [],
    stackParser,
    transport: (options: BaseTransportOptions) =>
      createTransport(options, async (request) => {
        const res = await fetch(options.url, { method: "POST", body: request.body });
        return {
          statusCode: res.status,
          headers: { "retry-after": res.headers.get("retry-after"), "x-sentry-rate-limits": res.headers.get("x-sentry-rate-limits") },
        };
      }),
  });
  client.init();
  return {
    report({ error, code, method, traceId, fields }) {
      client.captureException(error, {
        captureContext: { tags: { trace_id: traceId, grpc_method: method, grpc_code: code }, extra: { ...fields } },
      });
    },
    async flush(timeoutMs) {
      await client.flush(timeoutMs);
    },
  };
}
