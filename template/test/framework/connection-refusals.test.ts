/**
 * Connections a port closes at its cap (GRPC_MAX_CONNECTIONS, HTTP_MAX_CONNECTIONS) are counted in
 * `grpc_server_connections_refused_total{port}` and logged, at most one warning per port every 10 s: a client
 * that floods a port with connections is seen. Real sockets (node:http2, node:net) against a real server; the
 * metrics are read from the admin port, whose connections are not the HTTP port's.
 */
import assert from "node:assert/strict";
import { once } from "node:events";
import { type ClientHttp2Session, connect as http2Connect } from "node:http2";
import { connect, type Socket } from "node:net";
import { test } from "node:test";
import { startTestServer } from "../../src/framework/testing/harness.js";
import { fixtureService } from "./fixtures/fixture-service.js";

/** An HTTP/2 connection to the gRPC port: "accepted" once the server's SETTINGS arrive, "closed" if it is closed first. */
function grpcConnection(port: number, open: ClientHttp2Session[]): Promise<"accepted" | "closed"> {
  const session = http2Connect(`http://127.0.0.1:${port}`);
  session.on("error", () => {});
  open.push(session);
  return Promise.race([
    once(session, "remoteSettings").then(() => "accepted" as const),
    once(session, "close").then(() => "closed" as const),
  ]).catch(() => "closed" as const);
}

/** A TCP connection to the HTTP port that sends a request: "accepted" once answered, "closed" if closed unanswered. */
function httpConnection(port: number, open: Socket[]): Promise<"accepted" | "closed"> {
  const socket = connect(port, "127.0.0.1");
  socket.on("error", () => {});
  open.push(socket);
  socket.write("GET /healthcheck HTTP/1.1\r\nHost: x\r\n\r\n");
  return Promise.race([once(socket, "data").then(() => "accepted" as const), once(socket, "close").then(() => "closed" as const)]).catch(
    () => "closed" as const,
  );
}

test("connections refused at GRPC_MAX_CONNECTIONS and HTTP_MAX_CONNECTIONS are counted by port and logged once per burst", async (t) => {
  const server = await startTestServer([fixtureService], {
    GRPC_MAX_CONNECTIONS: "1",
    HTTP_MAX_CONNECTIONS: "2",
    ADMIN_PORT: "0",
    // The gateway's own hop would take the gRPC port's one place.
    GATEWAY_MODE: "in-process",
  });
  const sessions: ClientHttp2Session[] = [];
  const sockets: Socket[] = [];
  t.after(async () => {
    for (const s of sessions) s.destroy();
    for (const s of sockets) s.destroy();
    await server.close();
  });
  const grpcPort = Number(server.grpcAddress.split(":")[1]);
  const httpPort = Number(new URL(server.httpUrl).port);

  const before = await refusedByPort(server.adminUrl!);
  assert.deepEqual(before, { grpc: 0, http: 0, admin: 0 }, "every port's series is there from start-up");

  assert.equal(await grpcConnection(grpcPort, sessions), "accepted");
  for (let i = 0; i < 3; i++) assert.equal(await grpcConnection(grpcPort, sessions), "closed");
  assert.deepEqual([await httpConnection(httpPort, sockets), await httpConnection(httpPort, sockets)], ["accepted", "accepted"]);
  for (let i = 0; i < 2; i++) assert.equal(await httpConnection(httpPort, sockets), "closed");

  assert.deepEqual(await refusedByPort(server.adminUrl!), { grpc: 3, http: 2, admin: 0 });
  const warnings = server.logs.filter((l) => /connections refused/.test(String(l.msg)));
  assert.deepEqual(
    warnings.map((l) => [l.level, l.msg, l.port, l.refused]),
    [
      ["warn", "gRPC connections refused: GRPC_MAX_CONNECTIONS are open", "grpc", 1],
      ["warn", "HTTP connections refused: HTTP_MAX_CONNECTIONS are open", "http", 1],
    ],
    "the first refusal of each port is logged, the next ones within 10 s only counted",
  );
});

async function refusedByPort(adminUrl: string): Promise<Record<string, number>> {
  const text = await (await fetch(`${adminUrl}/metrics`)).text();
  const counts: Record<string, number> = {};
  for (const match of text.matchAll(/^grpc_server_connections_refused_total\{port="(\w+)"\} (\d+)$/gm))
    counts[match[1]!] = Number(match[2]);
  return counts;
}
