import type { DescService } from "@bufbuild/protobuf";
import { type Client, createClient } from "../client/client.js";
import { loadConfig } from "../config/load.js";
import { App } from "../lifecycle/app.js";
import type { ServiceImpl } from "../lifecycle/service.js";

export interface TestServer {
  app: App;
  /** `127.0.0.1:<port>` of the gRPC server. */
  grpcAddress: string;
  /** `http://127.0.0.1:<port>` of the HTTP server. */
  httpUrl: string;
  /** `http://127.0.0.1:<port>` of the admin server; set when the test passes ADMIN_PORT (use "0"). */
  adminUrl: string | undefined;
  /** Every log line written so far, parsed. */
  logs: Record<string, unknown>[];
  /** A typed gRPC client of this server; closed with the server. */
  client<S extends DescService>(service: S): Client<S>;
  close(): Promise<void>;
}

/**
 * Starts the whole service in this process on free loopback ports, for end-to-end tests.
 * Configuration comes only from `env` over the defaults (never from the developer's
 * shell or .env), so tests behave the same everywhere.
 */
export async function startTestServer(services: ServiceImpl[], env: Record<string, string> = {}): Promise<TestServer> {
  const config = loadConfig({
    LISTEN_HOST: "127.0.0.1",
    GRPC_PORT: "0",
    HTTP_PORT: "0",
    GRPC_GRACEFUL_DURATION_IN_SECONDS: "0",
    SHUTDOWN_DURATION_IN_SECONDS: "5",
    LOG_LEVEL: "info",
    // Overload protection's event-loop checks off: a test process's loop is held up by compiling and by the
    // other tests on the machine, which must not refuse a test's calls. A test of overload turns them on.
    OVERLOAD_MAX_EVENT_LOOP_DELAY_MS: "0",
    OVERLOAD_MAX_EVENT_LOOP_UTILIZATION: "0",
    ...env,
  });
  const logs: Record<string, unknown>[] = [];
  const destination = { write: (line: string) => void logs.push(JSON.parse(line) as Record<string, unknown>) };
  const app = new App({ services, config, logDestination: destination });
  const { grpcPort, httpUrl, adminUrl } = await app.start();
  const grpcAddress = `127.0.0.1:${grpcPort}`;
  const clients: { close(): void }[] = [];
  return {
    app,
    grpcAddress,
    httpUrl,
    adminUrl,
    logs,
    client(service) {
      // No retries, no breaker: a test sees exactly the status the server sent, however often it fails.
      const c = createClient(service, grpcAddress, { retry: false, breaker: false });
      clients.push(c);
      return c;
    },
    async close() {
      for (const c of clients) c.close();
      await app.stop();
    },
  };
}
