/**
 * Client-streaming and bidi routes over HTTP, in each gateway mode, the grpc-gateway way: the request
 * body is a stream of JSON messages (newline-delimited or concatenated, chunked), each handed to the
 * handler as it arrives; a client stream answers one JSON object, a bidi stream NDJSON lines as they
 * are produced. The client is node:http writing the body one message at a time.
 */
import assert from "node:assert/strict";
import { EventEmitter, once } from "node:events";
import { type ClientRequest, request as httpRequest, type IncomingHttpHeaders, type IncomingMessage } from "node:http";
import { after, before, describe, test } from "node:test";
import { Code, defineService, GrpcError } from "../../src/framework/index.js";
import { startTestServer, type TestServer } from "../../src/framework/testing/harness.js";
import { StreamService } from "../gen/gatewaytest/v1/streams_pb.js";

/** The largest message of the test servers: small, so a body of many messages is far over it. */
const MAX_MESSAGE = 4096;

/** StreamService's handlers; `events` tells the test what they saw ("total" per message, "ended" when a conversation's handler is done). */
function createStreams() {
  const events = new EventEmitter();
  const service = defineService(StreamService, {
    handlers: {
      async total(requests, ctx) {
        ctx.responseHeader.set("stream-kind", "client");
        let total = 0n;
        let count = 0;
        const labels: string[] = [];
        for await (const r of requests) {
          events.emit("total", r.value);
          if (r.failCode) throw new GrpcError(r.failCode, `failed at message ${count + 1}`);
          total += r.value;
          count++;
          if (r.label) labels.push(r.label);
          if (r.answerNow) break;
        }
        ctx.responseTrailer.set("total-count", String(count));
        return { total, count, labels };
      },
      async *converse(requests, ctx) {
        ctx.responseHeader.set("stream-kind", "bidi");
        if (ctx.metadata.get("early-header").length > 0) ctx.sendHeader();
        let seq = 0;
        try {
          for await (const r of requests) {
            if (r.failCode) throw new GrpcError(r.failCode, `failed at message ${seq + 1}`);
            yield { text: r.text.toUpperCase(), seq: ++seq };
          }
        } finally {
          events.emit("ended");
        }
      },
    },
  });
  return { service, events };
}

interface Reply {
  status: number;
  headers: IncomingHttpHeaders;
  trailers: NodeJS.Dict<string>;
  body: string;
}

function collect(res: IncomingMessage): Promise<Reply> {
  return new Promise((resolve, reject) => {
    let body = "";
    res.setEncoding("utf8");
    res.on("data", (c: string) => (body += c));
    res.on("end", () => resolve({ status: res.statusCode ?? 0, headers: res.headers, trailers: res.trailers, body }));
    res.on("error", reject);
  });
}

/** A POST whose body goes out chunked, a piece at a time, while the response may already be coming. */
function open(url: string, headers: Record<string, string> = {}) {
  const req: ClientRequest = httpRequest(url, { method: "POST", headers: { "content-type": "application/x-ndjson", ...headers } });
  const response = new Promise<IncomingMessage>((resolve, reject) => {
    req.once("response", resolve);
    req.once("error", reject);
  });
  // Once answered, the server may close the connection while the body is still open (it never reads
  // the rest): writing on then fails, which the tests expect.
  req.on("error", () => {});
  req.flushHeaders();
  return {
    req,
    response,
    /**
     * Writes one piece of the body and waits until it is handed to the socket (or failed to be: the
     * server may already have answered and closed; what the test then reads tells).
     */
    send: (piece: string) => new Promise<void>((resolve) => req.write(piece, () => resolve())),
    end: () => req.end(),
  };
}

/** The whole body in `pieces`, each written only once the previous one is on its way. */
async function post(url: string, pieces: string[], headers: Record<string, string> = {}): Promise<Reply> {
  const call = open(url, headers);
  for (const piece of pieces) await call.send(piece);
  call.end();
  return collect(await call.response);
}

/** Reads NDJSON lines from a response as they come. */
function lines(res: IncomingMessage) {
  let buffered = "";
  const ready: string[] = [];
  let waiting: ((line: string | undefined) => void) | undefined;
  let ended = false;
  res.setEncoding("utf8");
  res.on("data", (c: string) => {
    buffered += c;
    for (let i = buffered.indexOf("\n"); i !== -1; i = buffered.indexOf("\n")) {
      ready.push(buffered.slice(0, i));
      buffered = buffered.slice(i + 1);
    }
    while (waiting && ready.length > 0) {
      const w = waiting;
      waiting = undefined;
      w(ready.shift());
    }
  });
  res.on("end", () => {
    ended = true;
    waiting?.(undefined);
  });
  return {
    /** The next line, parsed; undefined once the response has ended. */
    next(): Promise<Record<string, unknown> | undefined> {
      if (ready.length > 0) return Promise.resolve(JSON.parse(ready.shift()!));
      if (ended) return Promise.resolve(undefined);
      return new Promise((resolve) => (waiting = (line) => resolve(line === undefined ? undefined : JSON.parse(line))));
    },
  };
}

for (const mode of ["tcp", "unix", "in-process"] as const) {
  describe(`client-streaming and bidi routes (gateway mode ${mode})`, () => {
    const streams = createStreams();
    let server: TestServer;
    before(async () => {
      server = await startTestServer([streams.service], { GATEWAY_MODE: mode, GRPC_MAX_RECV_MSG_SIZE: String(MAX_MESSAGE) });
    });
    after(() => server.close());
    const url = (path: string) => `${server.httpUrl}${path}`;

    describe("client-streaming", () => {
      test("each message of a chunked NDJSON body reaches the handler before the next is sent; one JSON answer at the end", async () => {
        const call = open(url("/v1/totals"), { te: "trailers" });
        for (const [piece, value] of [
          ['{"value":"1","label":"a"}\n', 1n],
          ['{"value":2}\n', 2n],
          ['{"value":3,"label":"c"}', 3n],
        ] as const) {
          const seen = once(streams.events, "total");
          await call.send(piece);
          assert.deepEqual(await seen, [value]);
        }
        call.end();
        const reply = await collect(await call.response);
        assert.equal(reply.status, 200);
        assert.equal(reply.headers["content-type"], "application/json");
        assert.equal(reply.headers["grpc-metadata-stream-kind"], "client");
        assert.deepEqual(JSON.parse(reply.body), { total: "6", count: 3, labels: ["a", "c"] });
        assert.equal(reply.trailers["grpc-trailer-total-count"], "3");
      });

      test("concatenated JSON cut anywhere, even inside strings and numbers", async () => {
        const body = '{"value":10,"label":"x}{"}{"value":"20"} {"value":12,"label":"\\"q\\""}';
        const pieces = body.match(/.{1,3}/gs)!;
        const reply = await post(url("/v1/totals"), pieces);
        assert.equal(reply.status, 200);
        assert.deepEqual(JSON.parse(reply.body), { total: "42", count: 3, labels: ["x}{", '"q"'] });
      });

      test("an empty body is a stream of no message: the handler answers at the half-close", async () => {
        const reply = await post(url("/v1/totals"), []);
        assert.equal(reply.status, 200);
        assert.deepEqual(JSON.parse(reply.body), { total: "0", count: 0, labels: [] });
      });

      test("a body field binding: each message is the bare field value; the path variable is set on every message", async () => {
        const reply = await post(url("/v1/totals/dice:values"), ["1 2\n", "3"]);
        assert.equal(reply.status, 200);
        assert.deepEqual(JSON.parse(reply.body), { total: "6", count: 3, labels: ["dice", "dice", "dice"] });
      });

      test("malformed JSON mid-stream is 400 INVALID_ARGUMENT naming the message and the problem", async () => {
        const reply = await post(url("/v1/totals"), ['{"value":1}\n', '{"value":}\n']);
        assert.equal(reply.status, 400);
        const error = JSON.parse(reply.body);
        assert.equal(error.code, Code.INVALID_ARGUMENT);
        assert.match(error.message, /^request message 2: malformed JSON: /);
      });

      test("a message of the wrong shape is 400 naming the message and the field", async () => {
        const reply = await post(url("/v1/totals"), ['{"value":1}\n{"value":"one"}\n']);
        assert.equal(reply.status, 400);
        assert.match(JSON.parse(reply.body).message, /^request message 2: .*value/);
      });

      test("a body that stops inside a message is 400", async () => {
        const reply = await post(url("/v1/totals"), ['{"value":1}\n{"value":2']);
        assert.equal(reply.status, 400);
        assert.match(JSON.parse(reply.body).message, /ended inside a message/);
      });

      test("the size limit is per message: many small ones pass, one over it is 413 RESOURCE_EXHAUSTED", async () => {
        const many = Array.from({ length: 200 }, () => `{"value":1,"label":"${"l".repeat(40)}"}\n`);
        assert.ok(many.join("").length > 2 * MAX_MESSAGE);
        const ok = await post(url("/v1/totals"), many);
        assert.equal(ok.status, 200);
        assert.equal(JSON.parse(ok.body).count, 200);

        const big = await post(url("/v1/totals"), ['{"value":1}\n', `{"label":"${"x".repeat(MAX_MESSAGE)}"}\n`]);
        assert.equal(big.status, 413);
        const error = JSON.parse(big.body);
        assert.equal(error.code, Code.RESOURCE_EXHAUSTED);
        assert.match(error.message, /request message larger than max/);
      });

      test("an error from the handler mid-stream is the HTTP status of its code", async () => {
        const reply = await post(url("/v1/totals"), ['{"value":1}\n', '{"failCode":5}\n']);
        assert.equal(reply.status, 404);
        assert.deepEqual(JSON.parse(reply.body), { code: 5, message: "failed at message 2", details: [] });
      });

      test("an early answer comes while the client is still sending; the connection then closes, the rest unread", async () => {
        const call = open(url("/v1/totals"));
        await call.send('{"value":5}\n{"value":2,"answerNow":true}\n');
        const reply = await collect(await call.response); // the body is still open
        assert.equal(reply.status, 200);
        assert.equal(reply.headers.connection, "close");
        assert.deepEqual(JSON.parse(reply.body), { total: "7", count: 2, labels: [] });
        await once(call.req.socket!, "close"); // without the client ending its body
      });

      test("an error before the body ends closes the connection too: a body that never ends is not read", async () => {
        const call = open(url("/v1/totals"));
        await call.send('{"value":1}\n{"failCode":3}\n');
        const reply = await collect(await call.response);
        assert.equal(reply.status, 400);
        assert.equal(reply.headers.connection, "close");
        await once(call.req.socket!, "close");
      });

      test("Grpc-Timeout covers the whole call: a client that never sends gets 504 DEADLINE_EXCEEDED", async () => {
        const call = open(url("/v1/totals"), { "grpc-timeout": "200m" });
        const reply = await collect(await call.response);
        assert.equal(reply.status, 504);
        assert.equal(JSON.parse(reply.body).code, Code.DEADLINE_EXCEEDED);
      });
    });

    describe("bidi", () => {
      test("each reply arrives before the next request message is sent; NDJSON lines, then the end", async () => {
        const call = open(url("/v1/conversations"));
        await call.send('{"text":"hello"}\n');
        const res = await call.response;
        assert.equal(res.statusCode, 200);
        assert.equal(res.headers["content-type"], "application/x-ndjson");
        assert.equal(res.headers["grpc-metadata-stream-kind"], "bidi");
        const replies = lines(res);
        assert.deepEqual(await replies.next(), { result: { text: "HELLO", seq: 1 } });
        await call.send('{"text":"how"}{"text":');
        assert.deepEqual(await replies.next(), { result: { text: "HOW", seq: 2 } });
        await call.send('"are you"}\n');
        assert.deepEqual(await replies.next(), { result: { text: "ARE YOU", seq: 3 } });
        call.end();
        assert.equal(await replies.next(), undefined);
      });

      test("ctx.sendHeader() before the first reply sends the HTTP headers before the client sends anything", async () => {
        const call = open(url("/v1/conversations"), { "grpc-metadata-early-header": "1" });
        const res = await call.response; // nothing sent yet
        assert.equal(res.statusCode, 200);
        assert.equal(res.headers["grpc-metadata-stream-kind"], "bidi");
        const replies = lines(res);
        await call.send('{"text":"now"}\n');
        assert.deepEqual(await replies.next(), { result: { text: "NOW", seq: 1 } });
        call.end();
        assert.equal(await replies.next(), undefined);
      });

      test("an empty body: no reply, an empty 200 stream", async () => {
        const reply = await post(url("/v1/conversations"), []);
        assert.equal(reply.status, 200);
        assert.equal(reply.body, "");
      });

      test("an error before the first reply is the HTTP status of its code, as a JSON error body", async () => {
        const reply = await post(url("/v1/conversations"), ['{"text":"x","failCode":7}\n']);
        assert.equal(reply.status, 403);
        assert.deepEqual(JSON.parse(reply.body), { code: 7, message: "failed at message 1", details: [] });
      });

      test("an error after replies is a last {error} line; the status stays 200", async () => {
        const reply = await post(url("/v1/conversations"), ['{"text":"a"}\n', '{"text":"b","failCode":9}\n']);
        assert.equal(reply.status, 200);
        assert.deepEqual(
          reply.body
            .trim()
            .split("\n")
            .map((l) => JSON.parse(l)),
          [{ result: { text: "A", seq: 1 } }, { error: { code: 9, message: "failed at message 2", details: [] } }],
        );
      });

      test("malformed JSON after a reply is a last error line with code 3 naming the message", async () => {
        const call = open(url("/v1/conversations"));
        await call.send('{"text":"a"}\n');
        const replies = lines(await call.response);
        assert.deepEqual(await replies.next(), { result: { text: "A", seq: 1 } });
        await call.send("{nope}\n");
        const last = (await replies.next()) as { error: { code: number; message: string } };
        assert.equal(last.error.code, Code.INVALID_ARGUMENT);
        assert.match(last.error.message, /^request message 2: malformed JSON/);
        assert.equal(await replies.next(), undefined);
        call.end();
      });

      test("a message over the size limit after a reply is a last error line with code 8", async () => {
        const call = open(url("/v1/conversations"));
        await call.send('{"text":"a"}\n');
        const replies = lines(await call.response);
        await replies.next();
        await call.send(`{"text":"${"y".repeat(MAX_MESSAGE)}"}\n`);
        const last = (await replies.next()) as { error: { code: number } };
        assert.equal(last.error.code, Code.RESOURCE_EXHAUSTED);
        call.end();
      });

      test("a client that keeps sending after the stream ended is cut off once 256 KiB more were thrown away", async () => {
        const call = open(url("/v1/conversations"));
        await call.send('{"text":"a"}\n');
        const replies = lines(await call.response);
        await replies.next();
        await call.send('{"text":"b","failCode":9}\n');
        assert.equal(((await replies.next()) as { error: { code: number } }).error.code, 9);
        assert.equal(await replies.next(), undefined);
        const closed = once(call.req.socket!, "close");
        for (let i = 0; i < 40 && !call.req.destroyed; i++) await call.send(" ".repeat(16 * 1024));
        await closed;
      });

      test("the client leaving mid-conversation ends the handler", async () => {
        const call = open(url("/v1/conversations"));
        await call.send('{"text":"a"}\n');
        const replies = lines(await call.response);
        await replies.next();
        const ended = once(streams.events, "ended");
        call.req.destroy();
        await ended;
      });
    });
  });
}
