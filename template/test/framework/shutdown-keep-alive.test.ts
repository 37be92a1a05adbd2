/**
 * A request that arrives on a keep-alive connection once the HTTP server began closing (the connection was busy
 * with a call in flight, so closing could not end it) is refused in the service's own error shape: 503,
 * `{"code":14,...}` and Connection: close, so the client sends it again on a new connection (to another pod),
 * while the call in flight still completes.
 */
import assert from "node:assert/strict";
import { subscribe, unsubscribe } from "node:diagnostics_channel";
import { once } from "node:events";
import type { IncomingMessage } from "node:http";
import { connect, type Socket } from "node:net";
import { test } from "node:test";
import { defineService } from "../../src/framework/index.js";
import { startTestServer } from "../../src/framework/testing/harness.js";
import { FixtureService } from "../gen/fixture/v1/fixture_pb.js";
import { fixtureService } from "./fixtures/fixture-service.js";

interface RawResponse {
  status: number;
  headers: Record<string, string>;
  body: string;
}

/** The responses of one HTTP/1.1 connection, in order (every one has a Content-Length). */
function parseResponses(text: string): RawResponse[] {
  const responses: RawResponse[] = [];
  let rest = text;
  while (rest.length > 0) {
    const end = rest.indexOf("\r\n\r\n");
    assert.ok(end > 0, `a response head in ${JSON.stringify(rest)}`);
    const [statusLine, ...lines] = rest.slice(0, end).split("\r\n");
    const headers: Record<string, string> = {};
    for (const line of lines) {
      const colon = line.indexOf(":");
      headers[line.slice(0, colon).toLowerCase()] = line.slice(colon + 1).trim();
    }
    const length = Number(headers["content-length"]);
    assert.ok(Number.isInteger(length), `a Content-Length in ${statusLine}`);
    responses.push({ status: Number(statusLine?.split(" ")[1]), headers, body: rest.slice(end + 4, end + 4 + length) });
    rest = rest.slice(end + 4 + length);
  }
  return responses;
}

/** Resolves when a server of this process has parsed a request for `path` (Node's http.server.request.start channel). */
function requestArrives(path: string): Promise<void> {
  return new Promise((resolve) => {
    const onStart = (message: unknown) => {
      if ((message as { request: IncomingMessage }).request.url !== path) return;
      unsubscribe("http.server.request.start", onStart);
      resolve();
    };
    subscribe("http.server.request.start", onStart);
  });
}

async function rawConnection(port: number): Promise<{ socket: Socket; received: () => string; closed: Promise<unknown> }> {
  const socket = connect(port, "127.0.0.1");
  socket.on("error", () => {});
  let text = "";
  socket.setEncoding("utf8").on("data", (chunk: string) => (text += chunk));
  const closed = once(socket, "close");
  await once(socket, "connect");
  return { socket, received: () => text, closed };
}

test(
  "a request on a kept-alive connection after HTTP began closing: 503 UNAVAILABLE in the JSON error shape, Connection: close; the call in flight completes",
  {
    timeout: 20_000,
  },
  async (t) => {
    let entered!: () => void;
    const inHandler = new Promise<void>((resolve) => (entered = resolve));
    let release!: () => void;
    const released = new Promise<void>((resolve) => (release = resolve));
    // Echo held open until the test releases it: the call in flight that keeps the connection busy.
    const held = defineService(FixtureService, {
      handlers: {
        ...fixtureService.handlers,
        async echo(request) {
          entered();
          await released;
          return { message: request.message };
        },
      },
    });
    const server = await startTestServer([held]);
    t.after(async () => {
      release();
      await server.close();
    });
    const port = Number(new URL(server.httpUrl).port);

    const conn = await rawConnection(port);
    // A connection that never sends a request: the server closes it as its close begins, which marks that moment.
    const spare = await rawConnection(port);
    const body = JSON.stringify({ message: "in flight" });
    conn.socket.write(
      `POST /api/v1/echo HTTP/1.1\r\nHost: test\r\nContent-Type: application/json\r\nContent-Length: ${Buffer.byteLength(body)}\r\n\r\n${body}`,
    );
    await inHandler;

    const stopping = server.close();
    await spare.closed; // HTTP's close has begun
    const lateArrived = requestArrives("/api/v1/echo/late");
    conn.socket.write("GET /api/v1/echo/late HTTP/1.1\r\nHost: test\r\n\r\n");
    await lateArrived;
    release();
    await conn.closed; // the server ends the connection after the refusal
    await stopping;

    const [inFlight, late, ...more] = parseResponses(conn.received());
    assert.equal(inFlight?.status, 200, "the call in flight completes");
    assert.equal(JSON.parse(inFlight?.body ?? "").message, "in flight");
    assert.deepEqual(
      { status: late?.status, contentType: late?.headers["content-type"], connection: late?.headers.connection, body: late?.body },
      {
        status: 503,
        contentType: "application/json",
        connection: "close",
        body: '{"code":14,"message":"server is shutting down","details":[]}',
      },
    );
    assert.deepEqual(more, []);
  },
);
