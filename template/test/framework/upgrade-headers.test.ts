/**
 * An HTTP/1.1 request carrying `Upgrade` for a protocol the HTTP port does not take (`h2c`, as curl
 * --http2 and Java's HttpClient send by default; any unknown token) is served as a plain request, the
 * header ignored: probes, REST, server streams and Connect all answer, never 404, and the
 * connection stays usable. Raw node:net sockets send exactly what those clients send, in each gateway mode.
 */
import assert from "node:assert/strict";
import { connect } from "node:net";
import { after, before, describe, test } from "node:test";
import { startTestServer, type TestServer } from "../../src/framework/testing/harness.js";
import { fixtureService } from "./fixtures/fixture-service.js";

/** The upgrade headers curl --http2 adds to a plain http:// request. */
const H2C = "Connection: Upgrade, HTTP2-Settings\r\nUpgrade: h2c\r\nHTTP2-Settings: AAMAAABkAAQAoAAAAAIAAAAA\r\n";

interface Response {
  status: number;
  head: string;
  body: string;
}

/**
 * Sends `requests` on one connection, each once the previous response is in (as curl and Java do after
 * an upgrade offer: they wait for the answer), and reads their responses (Content-Length or chunked).
 */
function exchange(port: number, requests: string[]): Promise<Response[]> {
  const count = requests.length;
  return new Promise((resolve, reject) => {
    const socket = connect(port, "127.0.0.1", () => socket.write(requests[0]!));
    let buffer: Buffer = Buffer.alloc(0);
    const responses: Response[] = [];
    socket.on("data", (chunk: Buffer) => {
      buffer = Buffer.concat([buffer, chunk]);
      for (;;) {
        const end = buffer.indexOf("\r\n\r\n");
        if (end === -1) return;
        const head = buffer.subarray(0, end).toString("latin1");
        const status = Number(head.split(" ", 2)[1]);
        const length = /\r\ncontent-length: *(\d+)/i.exec(head);
        let body: string;
        let rest: Buffer;
        if (length) {
          const size = Number(length[1]);
          if (buffer.length < end + 4 + size) return;
          body = buffer.subarray(end + 4, end + 4 + size).toString();
          rest = buffer.subarray(end + 4 + size);
        } else {
          const last = buffer.indexOf("\r\n0\r\n\r\n", end);
          if (last === -1) return;
          body = buffer.subarray(end + 4, last).toString();
          rest = buffer.subarray(last + 7);
        }
        responses.push({ status, head, body });
        buffer = rest;
        if (responses.length === count) {
          socket.destroy();
          resolve(responses);
          return;
        }
        socket.write(requests[responses.length]!);
      }
    });
    socket.on("error", reject);
    socket.on("close", () => reject(new Error(`connection closed after ${responses.length} of ${count} responses`)));
  });
}

for (const mode of ["tcp", "unix", "in-process"] as const) {
  describe(`requests carrying Upgrade: h2c and unknown upgrades (gateway mode ${mode})`, () => {
    let server: TestServer;
    let port: number;
    before(async () => {
      server = await startTestServer([fixtureService], { GATEWAY_MODE: mode });
      port = Number(new URL(server.httpUrl).port);
    });
    after(() => server.close());

    test("/healthcheck and /readycheck answer 200 to curl --http2's request, on one kept-alive connection", async () => {
      const [health, ready] = await exchange(port, [
        `GET /healthcheck HTTP/1.1\r\nHost: x\r\n${H2C}\r\n`,
        "GET /readycheck HTTP/1.1\r\nHost: x\r\nConnection: Upgrade\r\nUpgrade: foo/2\r\n\r\n",
      ]);
      assert.equal(health!.status, 200, health!.head);
      assert.equal(ready!.status, 200, ready!.head);
    });

    test("REST unary (GET and POST with a body), a server stream and Connect are served with the upgrade ignored", async () => {
      const body = '{"message":"up"}';
      const [get, post, stream, connectCall] = await exchange(port, [
        `GET /api/v1/echo/hi HTTP/1.1\r\nHost: x\r\n${H2C}\r\n`,
        `POST /api/v1/echo HTTP/1.1\r\nHost: x\r\n${H2C}Content-Type: application/json\r\nContent-Length: ${body.length}\r\n\r\n${body}`,
        `GET /api/v1/countdown/2 HTTP/1.1\r\nHost: x\r\n${H2C}\r\n`,
        `POST /fixture.v1.FixtureService/Echo HTTP/1.1\r\nHost: x\r\n${H2C}Content-Type: application/json\r\nContent-Length: ${body.length}\r\n\r\n${body}`,
      ]);
      assert.equal(get!.status, 200, get!.head);
      assert.equal(JSON.parse(get!.body).message, "hi");
      assert.equal(post!.status, 200, post!.head);
      assert.equal(JSON.parse(post!.body).message, "up");
      assert.equal(stream!.status, 200, stream!.head);
      assert.match(stream!.body, /"remaining":1/);
      assert.equal(connectCall!.status, 200, connectCall!.head);
      assert.equal(JSON.parse(connectCall!.body).message, "up");
    });
  });
}
