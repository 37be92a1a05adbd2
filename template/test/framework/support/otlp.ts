/** A loopback HTTP receiver (OTLP, Sentry), and pointing this process's OpenTelemetry at one for a test. */
import { once } from "node:events";
import { createServer, type IncomingMessage } from "node:http";
import type { AddressInfo } from "node:net";
import type { TestContext } from "node:test";
import { context, propagation, trace } from "@opentelemetry/api";

export interface Received {
  url: string;
  body: Buffer;
}

/** A loopback HTTP receiver that answers `{}` and hands each request body to the test as it arrives. */
export async function receiver() {
  const bodies: Received[] = [];
  const waiters: (() => void)[] = [];
  const server = createServer(async (req: IncomingMessage, res) => {
    const chunks: Buffer[] = [];
    for await (const c of req) chunks.push(c as Buffer);
    bodies.push({ url: req.url ?? "", body: Buffer.concat(chunks) });
    res.writeHead(200, { "content-type": "application/json" }).end("{}");
    for (const w of waiters.splice(0)) w();
  });
  server.listen(0, "127.0.0.1");
  await once(server, "listening");
  const port = (server.address() as AddressInfo).port;
  return {
    port,
    bodies,
    /** Resolves once a received body satisfies `test`. */
    async waitFor(test: (b: Received) => boolean) {
      for (;;) {
        const found = bodies.find(test);
        if (found) return found;
        await new Promise<void>((resolve) => waiters.push(resolve));
      }
    },
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}

export type Receiver = Awaited<ReturnType<typeof receiver>>;

export interface OtlpSpan {
  name: string;
  traceId: string;
  spanId: string;
  kind: number;
  attributes: { key: string; value: { stringValue?: string } }[];
}

/**
 * For the test `t`: a receiver, and this process's OpenTelemetry settings pointing at it (OTLP over HTTP/JSON,
 * spans sent every 20 ms), for the next app the test starts. Undone after the test: the settings, the global
 * providers the app registered, the receiver.
 */
export async function exportSpansTo(t: TestContext, serviceName = "otlp-test"): Promise<Receiver> {
  const otlp = await receiver();
  const env = {
    OTEL_EXPORTER_OTLP_ENDPOINT: `http://127.0.0.1:${otlp.port}`,
    OTEL_EXPORTER_OTLP_PROTOCOL: "http/json",
    OTEL_SERVICE_NAME: serviceName,
    OTEL_BSP_SCHEDULE_DELAY: "20",
  };
  Object.assign(process.env, env);
  t.after(async () => {
    for (const k of Object.keys(env)) delete process.env[k];
    trace.disable();
    propagation.disable();
    context.disable();
    await otlp.close();
  });
  return otlp;
}

/** Every span the receiver got so far (`/v1/traces`, OTLP JSON). */
export function receivedSpans(otlp: Receiver): OtlpSpan[] {
  return otlp.bodies
    .filter((b) => b.url === "/v1/traces")
    .flatMap((b) =>
      (JSON.parse(b.body.toString()) as { resourceSpans: { scopeSpans: { spans: OtlpSpan[] }[] }[] }).resourceSpans.flatMap((r) =>
        r.scopeSpans.flatMap((s) => s.spans),
      ),
    );
}
