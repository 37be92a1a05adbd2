/**
 * The HTTP port's idle connections are bounded: at most HTTP_MAX_CONNECTIONS are open at once (one more is closed
 * as soon as it is accepted), and each ends at the header or keep-alive timeout. Raw node:net sockets against a
 * real server.
 */
import assert from "node:assert/strict";
import { once } from "node:events";
import { connect, type Socket } from "node:net";
import { after, before, describe, test } from "node:test";
import { startTestServer, type TestServer } from "../../src/framework/testing/harness.js";
import { fixtureService } from "./fixtures/fixture-service.js";

describe("the HTTP port's connection cap", () => {
  let server: TestServer;
  let port: number;
  before(async () => {
    server = await startTestServer([fixtureService], { HTTP_MAX_CONNECTIONS: "2" });
    port = Number(new URL(server.httpUrl).port);
  });
  after(() => server.close());

  /** A connection that has made one request and holds on to the kept-alive socket. */
  async function idle(): Promise<Socket> {
    const socket = connect(port, "127.0.0.1");
    socket.on("error", () => {});
    socket.write("GET /healthcheck HTTP/1.1\r\nHost: x\r\n\r\n");
    const closed = once(socket, "close").then(() => {
      throw new Error("closed without an answer");
    });
    const [data] = (await Promise.race([once(socket, "data"), closed])) as [Buffer];
    closed.catch(() => {});
    assert.match(data.toString(), /^HTTP\/1\.1 200 /);
    return socket;
  }

  test("connections beyond HTTP_MAX_CONNECTIONS are closed at once; one frees a place when it closes", async () => {
    const held = [await idle(), await idle()];
    const third = connect(port, "127.0.0.1");
    third.on("error", () => {});
    third.write("GET /healthcheck HTTP/1.1\r\nHost: x\r\n\r\n");
    let answered = false;
    third.on("data", () => (answered = true));
    await once(third, "close");
    assert.equal(answered, false, "the connection over the cap was served");
    held[0]!.destroy();
    await once(held[0]!, "close");
    // The server learns of the close asynchronously: a new connection may still be refused once.
    for (;;) {
      try {
        const again = await idle();
        again.destroy();
        break;
      } catch {}
    }
    held[1]!.destroy();
  });
});
