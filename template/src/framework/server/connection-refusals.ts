import type { Server } from "node:net";
import { rootLogger } from "../logging/logger.js";

/** At most one log line per this many milliseconds for a port's refused connections; the counter has every one. */
const LOG_INTERVAL_MS = 10_000;

/** The ports with a connection cap, as the `port` label of `grpc_server_connections_refused_total` names them. */
export type CappedPort = "grpc" | "http" | "admin";

const PORT_NAMES: Record<CappedPort, string> = { grpc: "gRPC", http: "HTTP", admin: "admin" };

/** What is told of each connection a port refuses at its cap: the metrics count it (`grpc_server_connections_refused_total`). */
export type OnConnectionRefused = () => void;

/**
 * Counts and logs the connections a listener closes at once because its connection cap (`net.Server`'s
 * `maxConnections`, which emits 'drop' for each) is reached: each is reported to `onRefused`, and a warning
 * naming the setting is logged at most every 10 s with the number refused since the last one, so a flood of
 * connections neither goes unseen nor floods the log. Nothing runs for accepted connections.
 */
export function reportRefusedConnections(
  server: Server,
  { port, setting, max, onRefused }: { port: CappedPort; setting: string; max: number; onRefused?: OnConnectionRefused | undefined },
): void {
  let sinceLog = 0;
  let lastLog = Number.NEGATIVE_INFINITY;
  server.on("drop", () => {
    onRefused?.();
    sinceLog++;
    const now = performance.now();
    if (now - lastLog < LOG_INTERVAL_MS) return;
    lastLog = now;
    rootLogger().warn({ port, refused: sinceLog, max }, `${PORT_NAMES[port]} connections refused: ${setting} are open`);
    sinceLog = 0;
  });
}
