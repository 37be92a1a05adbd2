import assert from "node:assert/strict";
import { once } from "node:events";
import { connect, createServer, type ServerHttp2Stream } from "node:http2";
import type { AddressInfo } from "node:net";
import { test } from "node:test";
import { ConnectionGuard } from "./grpc-connections.js";

/** A gRPC request message: the 5-byte prefix and 3 bytes. */
const MESSAGE = Buffer.from([0, 0, 0, 0, 3, 1, 2, 3]);

test("calls in flight whose message is in are not held by the first-message check", async () => {
  const guard = new ConnectionGuard({ maxConnections: 0, firstMessageTimeoutMs: 60_000 });
  const server = createServer();
  guard.watch(server);
  // A handler that reads the whole request, as grpc-js does, and never answers: every call stays in flight.
  const ended: ServerHttp2Stream[] = [];
  const arrived: ((stream: ServerHttp2Stream) => void)[] = [];
  server.on("stream", (stream: ServerHttp2Stream, headers) => {
    guard.admit(stream, headers);
    stream.on("data", () => {});
    stream.on("end", () => {
      ended.push(stream);
      arrived.shift()?.(stream);
    });
  });
  server.listen(0, "127.0.0.1");
  await once(server, "listening");
  const session = connect(`http://127.0.0.1:${(server.address() as AddressInfo).port}`);
  try {
    // One after the other, so that each compaction finds the earlier calls with their message in.
    for (let i = 0; i < 64; i++) {
      const next = new Promise<ServerHttp2Stream>((resolve) => arrived.push(resolve));
      session.request({ ":method": "POST", ":path": "/pkg.Service/Method", "content-type": "application/grpc" }).end(MESSAGE);
      await next;
    }
    assert.equal(ended.filter((s) => !s.closed).length, 64, "all 64 calls are still in flight");
    // Before, it kept every call until it closed: 64 here, and under load as many closed ones again.
    assert.ok(guard.held <= 16, `held: ${guard.held}`);
  } finally {
    guard.close();
    session.destroy();
    server.close();
  }
});
