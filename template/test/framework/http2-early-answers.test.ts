/**
 * Over HTTP/2, a request answered before its body ended (refused: 413, 415, an undecodable message, a too large
 * Connect or gRPC-Web message) has its own stream reset with NO_ERROR once the answer is out (RFC 9113 §8.1:
 * stop sending, keep the response), and the connection's other calls go on. Before, the Connect unary, gRPC-Web
 * and streaming-route readers closed the request's socket, which over HTTP/2 is the whole connection's (every
 * other call on it died, as a browser's calls share one); a REST request refused by its body reader, and a
 * Connect stream refused by Connect, kept their stream open, the unread rest buffered, until the client ended it
 * or a time limit (the Connect call stayed in flight, holding up shutdown for its whole budget). h2c with
 * node:http2 against a real server.
 */
import assert from "node:assert/strict";
import { type ClientHttp2Session, type ClientHttp2Stream, connect as http2Connect } from "node:http2";
import { after, before, describe, test } from "node:test";
import { Code } from "../../src/framework/index.js";
import { startTestServer, type TestServer } from "../../src/framework/testing/harness.js";
import { fixtureService } from "./fixtures/fixture-service.js";

const MAX_BYTES = 64 * 1024;
/** An envelope prefix (flags 0) declaring a message one byte over the limit, and the first 1 KiB of it. */
const OVERSIZED_ENVELOPE = Buffer.alloc(5 + 1024);
OVERSIZED_ENVELOPE.writeUInt32BE(MAX_BYTES + 1, 1);

/** The response's status, body, grpc-status (header, trailer or gRPC-Web trailer frame) and reset code, once the stream has closed. */
async function outcome(stream: ClientHttp2Stream) {
  let status: number | undefined;
  let grpcStatus: string | undefined;
  let body = "";
  stream.on("response", (h) => {
    status = Number(h[":status"]);
    grpcStatus ??= h["grpc-status"] as string | undefined;
  });
  stream.on("trailers", (t) => (grpcStatus ??= t["grpc-status"] as string | undefined));
  stream.setEncoding("latin1");
  stream.on("data", (c: string) => (body += c));
  stream.on("error", () => {});
  await new Promise((resolve) => stream.once("close", resolve)); // once() would reject on a reset
  grpcStatus ??= /grpc-status:\s*(\d+)/.exec(body)?.[1]; // gRPC-Web: in the body's trailer frame
  return { status, grpcStatus, body, rstCode: stream.rstCode };
}

describe("a request answered before its body ended, over HTTP/2", () => {
  let server: TestServer;
  let session: ClientHttp2Session;
  /** A client-streaming call open on the same connection through every case: it must outlive them all. */
  let bystander: ClientHttp2Stream;
  before(async () => {
    server = await startTestServer([fixtureService], { GRPC_MAX_RECV_MSG_SIZE: String(MAX_BYTES) });
    session = http2Connect(server.httpUrl);
    session.on("error", () => {});
    bystander = session.request(
      { ":method": "POST", ":path": "/api/v1/sum", "content-type": "application/x-ndjson" },
      { endStream: false },
    );
    bystander.write('{"value":"40"}\n');
  });
  after(async () => {
    session.destroy();
    await server.close();
  });

  /** Opens a request whose body the client never ends: only the server can close it. */
  function unended(path: string, contentType: string, ...chunks: (string | Buffer)[]): ClientHttp2Stream {
    const stream = session.request({ ":method": "POST", ":path": path, "content-type": contentType }, { endStream: false });
    for (const chunk of chunks) stream.write(chunk);
    return stream;
  }

  const cases: { name: string; open: () => ClientHttp2Stream; status: number; grpcStatus?: Code }[] = [
    {
      name: "REST, a body of a type the route does not take: 415",
      open: () => unended("/api/v1/echo", "text/plain", "message=hi"),
      status: 415,
    },
    {
      name: "REST, a body past GRPC_MAX_RECV_MSG_SIZE: 413",
      open: () => unended("/api/v1/echo", "application/json", `{"message":"${"x".repeat(MAX_BYTES)}`),
      status: 413,
    },
    {
      name: "NDJSON client stream, a message that does not decode: 400",
      open: () => unended("/api/v1/sum", "application/x-ndjson", '{"value":"1"}\n{"value":x}\n'),
      status: 400,
    },
    {
      name: "Connect unary, a message past the limit: resource_exhausted",
      open: () => unended("/fixture.v1.FixtureService/Echo", "application/proto", Buffer.alloc(MAX_BYTES + 1)),
      status: 429,
    },
    {
      name: "Connect client stream, a message declaring more than the limit: an end-stream message",
      open: () => unended("/fixture.v1.FixtureService/Sum", "application/connect+proto", OVERSIZED_ENVELOPE),
      status: 200,
    },
    {
      name: "gRPC-Web unary, a frame declaring more than the limit: grpc-status 8",
      open: () => unended("/fixture.v1.FixtureService/Echo", "application/grpc-web+proto", OVERSIZED_ENVELOPE),
      status: 200,
      grpcStatus: Code.RESOURCE_EXHAUSTED,
    },
  ];

  for (const c of cases) {
    test(`${c.name}; its stream alone is reset with NO_ERROR`, { timeout: 10_000 }, async () => {
      const result = await outcome(c.open());
      assert.equal(result.status, c.status, result.body);
      if (c.grpcStatus !== undefined) assert.equal(result.grpcStatus, String(c.grpcStatus));
      assert.equal(result.rstCode, 0, "closed by the server with NO_ERROR while the client was still sending");
      assert.equal(session.closed || session.destroyed, false, "the connection is still open");
    });
  }

  test("the call that shared the connection with them all completes", { timeout: 10_000 }, async () => {
    bystander.end('{"value":"2"}\n');
    const result = await outcome(bystander);
    assert.equal(result.status, 200, result.body);
    assert.deepEqual(JSON.parse(result.body), { sum: "42", count: 2 });
  });
});
