import assert from "node:assert/strict";
import { once } from "node:events";
import { request } from "node:http";
import { connect, type Socket } from "node:net";
import { test } from "node:test";
import { loadConfig } from "../config/load.js";
import { createHttpServer } from "./http-server.js";

/** A raw connection to the server, open once connected; `closed` settles when the server ends it. */
async function rawConnection(port: number): Promise<{ socket: Socket; closed: Promise<unknown> }> {
  const socket = connect(port, "127.0.0.1");
  socket.on("error", () => {}); // a reset counts as closed too
  const closed = once(socket, "close");
  await once(socket, "connect");
  return { socket, closed };
}

/** The error code of a new connection attempt (or "connected"). */
function connectOutcome(port: number): Promise<string> {
  return new Promise((resolve) => {
    const socket = connect(port, "127.0.0.1");
    socket.on("connect", () => {
      socket.destroy();
      resolve("connected");
    });
    socket.on("error", (err: NodeJS.ErrnoException) => resolve(err.code ?? err.message));
  });
}

test(
  "closing ends connections that never sent a whole request at once, and still finishes the request in flight",
  {
    timeout: 20_000,
  },
  async () => {
    const app = await createHttpServer(loadConfig({}));
    let release!: () => void;
    const released = new Promise<void>((resolve) => (release = resolve));
    let entered!: () => void;
    const inHandler = new Promise<void>((resolve) => (entered = resolve));
    app.get("/slow", async () => {
      entered();
      await released;
      return { done: true };
    });
    await app.listen({ host: "127.0.0.1", port: 0 });
    const { port } = app.server.address() as { port: number };

    // A spare keep-alive socket that never sends anything, and one stuck halfway through its headers.
    const silent = await rawConnection(port);
    const partial = await rawConnection(port);
    partial.socket.write("GET /slow HTTP/1.1\r\nHost: x\r\n");
    // A request the server has accepted and is still working on.
    const response = new Promise<{ status: number; body: string }>((resolve, reject) => {
      request({ host: "127.0.0.1", port, path: "/slow", agent: false }, (res) => {
        let body = "";
        res.setEncoding("utf8").on("data", (chunk: string) => (body += chunk));
        res.on("end", () => resolve({ status: res.statusCode ?? 0, body }));
      })
        .on("error", reject)
        .end();
    });
    await inHandler;

    const closing = app.close();
    // Before the slow request is released: without the fix, `silent` holds the close (and the shutdown) until
    // the shutdown budget runs out, and this test until its timeout.
    await Promise.all([silent.closed, partial.closed]);
    assert.equal(await connectOutcome(port), "ECONNREFUSED", "new connections are refused while the request drains");

    release();
    assert.deepEqual(await response, { status: 200, body: '{"done":true}' });
    await closing;
  },
);

/** Sends `head` (and `body`) on a fresh connection and returns everything the server writes until it closes. */
async function rawExchange(port: number, head: string, body = ""): Promise<string> {
  const { socket, closed } = await rawConnection(port);
  let received = "";
  socket.setEncoding("utf8").on("data", (chunk: string) => (received += chunk));
  socket.write(head + body);
  socket.end();
  await closed;
  return received;
}

test("an Expect other than 100-continue is a 417 with the JSON error body; 100-continue still gets the request through", async (t) => {
  const app = await createHttpServer(loadConfig({}));
  app.post("/echo", async (req) => ({ got: req.body }));
  await app.listen({ host: "127.0.0.1", port: 0 });
  t.after(() => app.close());
  const { port } = app.server.address() as { port: number };
  const body = '{"a":1}';
  const head = (expect: string) =>
    `POST /echo HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: ${body.length}\r\nExpect: ${expect}\r\nConnection: close\r\n\r\n`;

  for (const expect of ["999-nope", "200-ok", "100-continuex"]) {
    const response = await rawExchange(port, head(expect), body);
    const [status, ...rest] = response.split("\r\n");
    assert.equal(status, "HTTP/1.1 417 Expectation Failed", `Expect: ${expect}`);
    assert.match(rest.join("\n"), /^content-type: application\/json$/im);
    const json = response.slice(response.indexOf("\r\n\r\n") + 4);
    assert.deepEqual(JSON.parse(json), { code: 9, message: "unsupported Expect header: only 100-continue is supported", details: [] });
  }

  const ok = await rawExchange(port, head("100-continue"), body);
  assert.match(ok, /^HTTP\/1\.1 100 Continue\r\n\r\nHTTP\/1\.1 200 OK\r\n/);
  assert.match(ok, /\{"got":"\{\\"a\\":1\}"\}$/);
});
