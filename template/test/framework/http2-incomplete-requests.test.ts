/**
 * HTTP/2 requests on the HTTP port that never finish arriving hold nothing for long, and never run a handler
 * with what did arrive: a request whose body never ends is answered 408 at HTTP_REQUEST_TIMEOUT_SECONDS, one
 * whose client resets it mid-body is dropped, and a connection stopped inside a request's header block is closed
 * at HTTP_HEADERS_TIMEOUT_SECONDS (as HTTP/1.1's limits do); long client-streaming and bidi calls keep only their
 * idle limit. Before, Node's http2 server held such streams and connections for ever (the connection's idle
 * timeout waits for its open streams), and its compatibility layer handed a reset request's partial body to the
 * handler as if whole. node:http2 and raw node:net clients (h2c) against a real server, the limits scaled down
 * as in http-long-streams.test.ts.
 */
import assert from "node:assert/strict";
import { once } from "node:events";
import { type ClientHttp2Session, type ClientHttp2Stream, connect as http2Connect } from "node:http2";
import { connect } from "node:net";
import { after, before, describe, test } from "node:test";
import { setTimeout as sleep } from "node:timers/promises";
import { Code } from "../../src/framework/index.js";
import { startTestServer, type TestServer } from "../../src/framework/testing/harness.js";
import { fixtureService } from "./fixtures/fixture-service.js";
import { readFrames } from "./support/idle-streams.js";
import { handled } from "./support/metrics.js";

const SCALE = 50;
const SCALED = {
  HTTP_HEADERS_TIMEOUT_SECONDS: String(10 / SCALE),
  HTTP_REQUEST_TIMEOUT_SECONDS: String(30 / SCALE),
  HTTP_STREAM_IDLE_TIMEOUT_SECONDS: String(60 / SCALE),
};

/** A response's status, body and whether the stream closed, once it has. */
async function outcome(stream: ClientHttp2Stream): Promise<{ status: number | undefined; body: string }> {
  let status: number | undefined;
  let body = "";
  stream.on("response", (h) => (status = Number(h[":status"])));
  stream.setEncoding("utf8");
  stream.on("data", (c: string) => (body += c));
  stream.on("error", () => {});
  await new Promise((resolve) => stream.once("close", resolve)); // once() would reject on a reset
  return { status, body };
}

describe(`incomplete HTTP/2 requests on the HTTP port, the limits at 1/${SCALE}`, () => {
  let server: TestServer;
  let session: ClientHttp2Session;
  before(async () => {
    server = await startTestServer([fixtureService], SCALED);
    session = http2Connect(server.httpUrl);
    session.on("error", () => {});
  });
  after(async () => {
    session.destroy();
    await server.close();
  });

  test(
    "a request whose body never ends gets 408 DEADLINE_EXCEEDED at the request timeout, and its handler never takes the part sent as the whole body; a bidi call is not held to it",
    {
      timeout: 20_000,
    },
    async () => {
      // A whole JSON message, but no END_STREAM: the body could go on.
      const stream = session.request(
        { ":method": "POST", ":path": "/api/v1/echo", "content-type": "application/json" },
        { endStream: false },
      );
      stream.write('{"message":"cut"}');
      const { status, body } = await outcome(stream);
      assert.equal(status, 408);
      assert.equal(JSON.parse(body).code, Code.DEADLINE_EXCEEDED);
      assert.equal(stream.rstCode, 0, "closed with NO_ERROR: stop sending");
      assert.equal(await handled(server, "Echo", "OK"), 0, "the handler never ran");
      // The connection is still good.
      const next = session.request({ ":method": "GET", ":path": "/api/v1/echo/again" });
      assert.deepEqual(await outcome(next).then((o) => [o.status, JSON.parse(o.body).message]), [200, "again"]);

      // A bidi call (its body streams for the whole call) keeps only its idle limit: a message every 0.4 s
      // outlives the request timeout (0.6 s).
      const bidi = session.request(
        { ":method": "POST", ":path": "/api/v1/chat", "content-type": "application/x-ndjson" },
        { endStream: false },
      );
      let text = "";
      bidi.setEncoding("utf8");
      bidi.on("data", (c: string) => (text += c));
      const messages = 5;
      for (let i = 0; i < messages; i++) {
        if (i > 0) await sleep(20_000 / SCALE);
        bidi.write(`{"text":"m${i}"}\n`);
      }
      bidi.end();
      await once(bidi, "close");
      const replies = text
        .trim()
        .split("\n")
        .map((l) => JSON.parse(l));
      assert.deepEqual(
        replies,
        Array.from({ length: messages }, (_, i) => ({ result: { text: `m${i}`, seq: i + 1 } })),
      );

      // So does a Connect client stream over HTTP/2 (enveloped JSON messages, 0.4 s apart).
      const sum = session.request(
        { ":method": "POST", ":path": "/fixture.v1.FixtureService/Sum", "content-type": "application/connect+json" },
        { endStream: false },
      );
      const chunks: Buffer[] = [];
      sum.on("data", (c: Buffer) => chunks.push(c));
      for (let i = 0; i < 3; i++) {
        if (i > 0) await sleep(20_000 / SCALE);
        const json = Buffer.from('{"value":"1"}');
        const envelope = Buffer.alloc(5);
        envelope.writeUInt32BE(json.length, 1);
        sum.write(Buffer.concat([envelope, json]));
      }
      sum.end();
      const [headers] = (await once(sum, "response")) as [Record<string, unknown>];
      await once(sum, "close");
      assert.equal(headers[":status"], 200);
      const answer = Buffer.concat(chunks);
      assert.deepEqual(JSON.parse(answer.subarray(5, 5 + answer.readUInt32BE(1)).toString()), { sum: "3", count: 3 });
    },
  );

  test(
    "a request whose client resets its stream before the body's end never reaches its handler with the part sent",
    {
      timeout: 20_000,
    },
    async () => {
      const before = await handled(server, "Echo", "OK");
      // Raw frames: Node's own client ends the stream (END_STREAM) before it resets it, which says the body is whole.
      const client = rawHttp2(Number(new URL(server.httpUrl).port));
      client.send(FRAME.HEADERS, FLAG.END_HEADERS, 1, [
        [":method", "POST"],
        [":scheme", "http"],
        [":path", "/api/v1/echo"],
        [":authority", "x"],
        ["content-type", "application/json"],
      ]);
      client.sendData(1, Buffer.from('{"message":"cut"}'));
      await client.roundTrip(); // the server has read the body so far
      client.reset(1);
      client.send(FRAME.HEADERS, FLAG.END_HEADERS | FLAG.END_STREAM, 3, [
        [":method", "GET"],
        [":scheme", "http"],
        [":path", "/api/v1/echo/after"],
        [":authority", "x"],
      ]);
      await client.response(3);
      client.socket.destroy();
      assert.equal(await handled(server, "Echo", "OK"), before + 1, "only the GET ran the handler");
    },
  );

  test(
    "a connection stopped inside a request's header block is closed at the header timeout; one whose stream was refused stays",
    {
      timeout: 20_000,
    },
    async () => {
      const socket = connect(Number(new URL(server.httpUrl).port), "127.0.0.1");
      socket.on("error", () => {});
      // The preface, empty SETTINGS, then a HEADERS frame for stream 1 without END_HEADERS (a CONTINUATION must
      // follow, and nothing else may come on the connection until it does): never sent.
      const block = Buffer.from([0x83, 0x86, 0x84]); // :method POST, :scheme http, :path / (static table)
      const head = Buffer.from([0, 0, block.length, 0x1, 0x0, 0, 0, 0, 1]);
      socket.write(
        Buffer.concat([Buffer.from("PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"), Buffer.from([0, 0, 0, 0x4, 0, 0, 0, 0, 0]), head, block]),
      );
      socket.resume();
      await once(socket, "close");

      // A stream that never reaches the handler because it was refused is not a header block in progress: the
      // client answers the server's PING, and its connection stays.
      const own = http2Connect(server.httpUrl);
      own.on("error", () => {});
      try {
        await once(own, "remoteSettings");
        // Over the 16 KiB header limit: nghttp2 resets the stream, which never reaches a handler.
        const refused = own.request({ ":path": "/healthcheck", "x-big": "x".repeat(20_000) });
        await outcome(refused);
        await once(own, "ping"); // the server asks; Node's client answers by itself
        const next = own.request({ ":path": "/healthcheck" });
        assert.equal((await outcome(next)).status, 200);
        assert.equal(own.closed || own.destroyed, false);
      } finally {
        own.destroy();
      }
    },
  );

  test(
    "a quiet connection is asked once whether a header block is in progress, and stays once it answers",
    {
      timeout: 20_000,
    },
    async () => {
      const quiet = http2Connect(server.httpUrl);
      quiet.on("error", () => {});
      try {
        assert.equal((await outcome(quiet.request({ ":path": "/healthcheck" }))).status, 200);
        let pings = 0;
        quiet.on("ping", () => pings++);
        await once(quiet, "ping"); // a header timeout after its newest stream began
        // Many header timeouts and a whole answer window (1 s at least) later: not asked again for that stream.
        await sleep(1500);
        assert.equal(pings, 1);
        assert.equal((await outcome(quiet.request({ ":path": "/healthcheck" }))).status, 200);
        assert.equal(quiet.closed || quiet.destroyed, false);
      } finally {
        quiet.destroy();
      }
    },
  );
});

const FRAME = { DATA: 0, HEADERS: 1, RST_STREAM: 3, SETTINGS: 4, PING: 6 } as const;
const FLAG = { END_STREAM: 0x1, ACK: 0x1, END_HEADERS: 0x4 } as const;

/** An h2c connection written frame by frame (HPACK literals without indexing): what Node's client will not send. */
function rawHttp2(port: number) {
  const socket = connect(port, "127.0.0.1");
  socket.on("error", () => {});
  const frame = (type: number, flags: number, id: number, payload: Buffer) => {
    const head = Buffer.alloc(9);
    head.writeUIntBE(payload.length, 0, 3);
    head[3] = type;
    head[4] = flags;
    head.writeUInt32BE(id, 5);
    socket.write(Buffer.concat([head, payload]));
  };
  const seen: { type: number; flags: number; id: number }[] = [];
  const waiters: (() => void)[] = [];
  readFrames(socket, ({ type, flags, streamId }) => seen.push({ type, flags, id: streamId }));
  // After the frames of a read are seen.
  socket.on("data", () => {
    for (const w of waiters.splice(0)) w();
  });
  const until = (match: (f: { type: number; flags: number; id: number }) => boolean) =>
    new Promise<void>((resolve, reject) => {
      const check = () => (seen.some(match) ? resolve() : waiters.push(check));
      socket.once("close", () => reject(new Error("the server closed the connection")));
      check();
    });
  socket.write("PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n");
  frame(FRAME.SETTINGS, 0, 0, Buffer.alloc(0));
  return {
    socket,
    send(type: number, flags: number, id: number, headers: [string, string][]) {
      const block = headers.flatMap(([n, v]) => [Buffer.from([0, n.length]), Buffer.from(n), Buffer.from([v.length]), Buffer.from(v)]);
      frame(type, flags, id, Buffer.concat(block));
    },
    sendData: (id: number, data: Buffer) => frame(FRAME.DATA, 0, id, data),
    reset: (id: number) => frame(FRAME.RST_STREAM, 0, id, Buffer.from([0, 0, 0, 8])), // CANCEL
    roundTrip() {
      frame(FRAME.PING, 0, 0, Buffer.alloc(8, 7));
      return until((f) => f.type === FRAME.PING && (f.flags & FLAG.ACK) !== 0);
    },
    response: (id: number) => until((f) => f.type === FRAME.HEADERS && f.id === id),
  };
}
