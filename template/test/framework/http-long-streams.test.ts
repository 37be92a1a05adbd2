/**
 * Long HTTP streams: a client-streaming or bidi call over HTTP is not ended by the request or
 * header timeouts while it is active; only its deadline, the idle limit between messages and shutdown end
 * it. A 10-minute bidi call exchanging a message every 20 s must complete: run here at 1/50 of the time,
 * every limit scaled alike (headers 10 s → 0.2 s, whole request 30 s → 0.6 s, idle 60 s → 1.2 s), so the
 * same code runs; a message every 0.4 s for 12 s. And the header timeout acts at its value, not at Node's
 * next 30 s sweep. node:http and raw node:net against a real server, in each gateway mode.
 */
import assert from "node:assert/strict";
import { once } from "node:events";
import { request as httpRequest, type IncomingMessage } from "node:http";
import { connect as http2Connect } from "node:http2";
import { connect } from "node:net";
import { after, before, describe, test } from "node:test";
import { setTimeout as sleep } from "node:timers/promises";
import { Code } from "../../src/framework/index.js";
import { startTestServer, type TestServer } from "../../src/framework/testing/harness.js";
import { fixtureService } from "./fixtures/fixture-service.js";
import { handled } from "./support/metrics.js";

// 1/50: the 20 s between messages become 0.4 s, 0.8 s short of the 1.2 s idle limit, room for a loaded machine's stalls.
const SCALE = 50;
const SCALED = {
  HTTP_HEADERS_TIMEOUT_SECONDS: String(10 / SCALE),
  HTTP_REQUEST_TIMEOUT_SECONDS: String(30 / SCALE),
  HTTP_STREAM_IDLE_TIMEOUT_SECONDS: String(60 / SCALE),
};
/** 10 minutes, a message every 20 s, scaled. */
const MESSAGES = 30;
const EVERY_MS = 20_000 / SCALE;

/** A streamed POST: pieces are written as the test goes; the response's NDJSON lines are read as they come. */
function open(url: string) {
  const req = httpRequest(url, { method: "POST", headers: { "content-type": "application/x-ndjson" } });
  req.on("error", () => {}); // the server may close first; what the test reads tells
  req.flushHeaders();
  const response = once(req, "response").then(([res]) => res as IncomingMessage);
  return { req, response, send: (piece: string) => new Promise<void>((resolve) => req.write(piece, () => resolve())) };
}

/** Reads a response's lines as they come; next() is the next one parsed, undefined at the end. */
function lines(res: IncomingMessage) {
  const it = (async function* () {
    let buffered = "";
    res.setEncoding("utf8");
    for await (const chunk of res) {
      buffered += chunk;
      for (let i = buffered.indexOf("\n"); i !== -1; i = buffered.indexOf("\n")) {
        yield JSON.parse(buffered.slice(0, i)) as Record<string, unknown>;
        buffered = buffered.slice(i + 1);
      }
    }
    if (buffered.trim() !== "") yield JSON.parse(buffered) as Record<string, unknown>;
  })();
  return { next: async () => (await it.next()).value };
}

for (const mode of ["tcp", "unix", "in-process"] as const) {
  describe(`long HTTP streams, at 1/${SCALE} of the time (gateway mode ${mode})`, () => {
    let server: TestServer;
    before(async () => {
      server = await startTestServer([fixtureService], { GATEWAY_MODE: mode, ...SCALED });
    });
    after(() => server.close());
    const url = (path: string) => `${server.httpUrl}${path}`;

    test("a 10-minute bidi call exchanging a message every 20 s completes: every reply, then a clean end", async () => {
      const call = open(url("/api/v1/chat"));
      await call.send('{"text":"m0"}\n');
      const replies = lines(await call.response);
      assert.deepEqual(await replies.next(), { result: { text: "m0", seq: 1 } });
      for (let i = 1; i < MESSAGES; i++) {
        await sleep(EVERY_MS);
        await call.send(`{"text":"m${i}"}\n`);
        assert.deepEqual(await replies.next(), { result: { text: `m${i}`, seq: i + 1 } }, `message ${i + 1}`);
      }
      call.req.end();
      assert.equal(await replies.next(), undefined);
    });

    test("a 10-minute client stream sending a message every 20 s gets its one answer", async () => {
      const call = open(url("/api/v1/sum"));
      for (let i = 0; i < MESSAGES; i++) {
        if (i > 0) await sleep(EVERY_MS);
        await call.send('{"value":1}\n');
      }
      call.req.end();
      const res = await call.response;
      assert.equal(res.statusCode, 200);
      let body = "";
      for await (const chunk of res) body += chunk;
      assert.deepEqual(JSON.parse(body), { sum: String(MESSAGES), count: MESSAGES });
    });

    test("a bidi call quiet both ways for the idle limit ends with a last error line of code 4", async () => {
      const call = open(url("/api/v1/chat"));
      await call.send('{"text":"a"}\n');
      const replies = lines(await call.response);
      assert.deepEqual(await replies.next(), { result: { text: "a", seq: 1 } });
      const last = (await replies.next()) as { error: { code: number; message: string } };
      assert.equal(last.error.code, Code.DEADLINE_EXCEEDED);
      assert.match(last.error.message, /HTTP_STREAM_IDLE_TIMEOUT_SECONDS/);
      assert.equal(await replies.next(), undefined);
      call.req.destroy();
    });

    test(
      "a Connect bidi call over h2c quiet both ways for the idle limit ends with deadline_exceeded and is counted",
      { timeout: 10_000 },
      async () => {
        const before = await handled(server, "Chat", "DeadlineExceeded");
        const session = http2Connect(server.httpUrl);
        session.on("error", () => {});
        const stream = session.request(
          { ":method": "POST", ":path": "/fixture.v1.FixtureService/Chat", "content-type": "application/connect+json" },
          { endStream: false },
        );
        stream.on("error", () => {});
        const message = Buffer.from('{"text":"a"}');
        const head = Buffer.alloc(5);
        head.writeUInt32BE(message.length, 1);
        stream.write(Buffer.concat([head, message])); // then nothing: no more messages, no end
        const chunks: Buffer[] = [];
        stream.on("data", (c: Buffer) => chunks.push(c));
        await once(stream, "end");
        session.destroy(); // the request was never ended: close() would wait for it
        // The reply to "a", then the end-stream message (flag 2) with the error.
        const body = Buffer.concat(chunks);
        let at = 0;
        const frames: { flags: number; data: string }[] = [];
        while (at + 5 <= body.length) {
          const length = body.readUInt32BE(at + 1);
          frames.push({ flags: body[at]!, data: body.subarray(at + 5, at + 5 + length).toString() });
          at += 5 + length;
        }
        assert.deepEqual(JSON.parse(frames[0]!.data), { text: "a", seq: 1 });
        const end = frames.at(-1)!;
        assert.equal(end.flags, 2);
        const error = (JSON.parse(end.data) as { error: { code: string; message: string } }).error;
        assert.equal(error.code, "deadline_exceeded");
        assert.match(error.message, /HTTP_STREAM_IDLE_TIMEOUT_SECONDS/);
        assert.equal(await handled(server, "Chat", "DeadlineExceeded"), before + 1);
      },
    );

    test("request headers that stop coming get 408 at the header timeout, not at Node's next 30 s sweep", { timeout: 5000 }, async () => {
      const socket = connect(Number(new URL(server.httpUrl).port), "127.0.0.1");
      socket.write("GET /healthcheck HTTP/1.1\r\nHost: x\r\n"); // and no end of headers
      let text = "";
      socket.setEncoding("utf8");
      socket.on("data", (c: string) => (text += c));
      await once(socket, "close");
      assert.match(text, /^HTTP\/1\.1 408 /);
    });
  });
}
