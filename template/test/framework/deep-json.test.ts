/**
 * JSON nested deeper than 100 levels is refused with INVALID_ARGUMENT in each protocol's
 * own error form, before it is parsed into objects: REST bodies and query values, NDJSON stream
 * messages (client-streaming and bidi), Connect JSON (the unary fast path and the Connect project's
 * handler), and WebSocket messages. 100 levels still pass. Clients are node:http, fetch and Node's
 * WebSocket against a real server, in each gateway mode.
 */
import assert from "node:assert/strict";
import { once } from "node:events";
import { request as httpRequest, type IncomingMessage } from "node:http";
import { after, before, describe, test } from "node:test";
import { WS_PROTOCOL } from "../../src/framework/browser/websocket.js";
import { Code } from "../../src/framework/index.js";
import { startTestServer, type TestServer } from "../../src/framework/testing/harness.js";
import { fixtureService } from "./fixtures/fixture-service.js";

/** An Echo request whose unknown `extra` member nests arrays so that the whole body is `depth` levels deep. */
const echoNested = (depth: number) => `{"message":"deep","extra":${"[".repeat(depth - 1)}${"]".repeat(depth - 1)}}`;

interface Reply {
  status: number;
  body: string;
}

/** A request whose body goes out in pieces, each once the previous one is written; the reply as text. */
function send(url: string, method: string, headers: Record<string, string>, pieces: (string | Buffer)[]): Promise<Reply> {
  return new Promise((resolve, reject) => {
    const req = httpRequest(url, { method, headers }, (res) => {
      let body = "";
      res.setEncoding("utf8");
      res.on("data", (c: string) => (body += c));
      res.on("end", () => resolve({ status: res.statusCode ?? 0, body }));
      res.on("error", reject);
    });
    req.on("error", reject);
    const write = (i: number) => {
      if (i === pieces.length) req.end();
      else req.write(pieces[i]!, () => write(i + 1));
    };
    write(0);
  });
}

const ndjson = { "content-type": "application/x-ndjson" };
const json = { "content-type": "application/json" };

for (const mode of ["tcp", "unix", "in-process"] as const) {
  describe(`JSON nested deeper than 100 levels over the gateway (mode ${mode})`, () => {
    let server: TestServer;
    before(async () => {
      server = await startTestServer([fixtureService], { GATEWAY_MODE: mode });
    });
    after(() => server.close());
    const url = (path: string) => `${server.httpUrl}${path}`;

    test("a REST body 100 levels deep is served; 101 levels is 400 code 3 saying so", async () => {
      const ok = await send(url("/api/v1/echo"), "POST", json, [echoNested(100)]);
      assert.equal(ok.status, 200, ok.body);
      assert.equal(JSON.parse(ok.body).message, "deep");
      const deep = await send(url("/api/v1/echo"), "POST", json, [echoNested(101)]);
      assert.equal(deep.status, 400);
      const error = JSON.parse(deep.body);
      assert.equal(error.code, Code.INVALID_ARGUMENT);
      assert.match(error.message, /nested deeper than 100 levels/);
    });

    test("brackets inside strings, escaped quotes included, do not count", async () => {
      const body = `{"message":"${"[{".repeat(200)}\\"${"[".repeat(200)}","extra":"\\\\"}`;
      const ok = await send(url("/api/v1/echo"), "POST", json, [body]);
      assert.equal(ok.status, 200, ok.body);
    });

    test("a 4 MB body two million levels deep is refused as too deep, not parsed", async () => {
      const body = `{"message":"x","extra":${"[".repeat(1_999_990)}${"]".repeat(1_999_990)}}`;
      const deep = await send(url("/api/v1/echo"), "POST", json, [body]);
      assert.equal(deep.status, 400);
      assert.match(JSON.parse(deep.body).message, /nested deeper than 100 levels/);
    });

    test("a client-stream message 101 levels deep is 400 code 3 naming the message", async () => {
      const reply = await send(url("/api/v1/sum"), "POST", ndjson, [
        '{"value":1}\n',
        `{"value":2,"x":${"[".repeat(100)}`,
        "]".repeat(100),
        "}\n",
      ]);
      assert.equal(reply.status, 400);
      const error = JSON.parse(reply.body);
      assert.equal(error.code, Code.INVALID_ARGUMENT);
      assert.equal(error.message, "request message 2: JSON nested deeper than 100 levels");
    });

    test("a bidi message 101 levels deep after a reply ends the stream with an error line of code 3", async () => {
      const req = httpRequest(url("/api/v1/chat"), { method: "POST", headers: ndjson });
      req.on("error", () => {}); // the server may close before the client ends its body
      req.write('{"text":"a"}\n');
      const [res] = (await once(req, "response")) as [IncomingMessage];
      assert.equal(res.statusCode, 200);
      res.setEncoding("utf8");
      let body = "";
      res.on("data", (c: string) => {
        // The first reply is in: only now the deep message.
        if (body === "" && c.includes("\n")) req.write(`{"text":"b","x":${'{"a":'.repeat(100)}1${"}".repeat(100)}}\n`);
        body += c;
      });
      await once(res, "end");
      req.destroy();
      const lines = body
        .trim()
        .split("\n")
        .map((l) => JSON.parse(l));
      assert.equal(lines.length, 2, body);
      assert.deepEqual(lines[0], { result: { text: "a", seq: 1 } });
      assert.equal(lines[1].error.code, Code.INVALID_ARGUMENT);
      assert.equal(lines[1].error.message, "request message 2: JSON nested deeper than 100 levels");
    });
  });
}

describe("JSON nested deeper than 100 levels over Connect and WebSocket", () => {
  let server: TestServer;
  before(async () => {
    server = await startTestServer([fixtureService]);
  });
  after(() => server.close());

  test("Connect unary JSON (the fast path): 100 levels served, 101 is 400 invalid_argument", async () => {
    const at = `${server.httpUrl}/fixture.v1.FixtureService/Echo`;
    const ok = await fetch(at, { method: "POST", headers: json, body: echoNested(100) });
    assert.equal(ok.status, 200);
    const deep = await fetch(at, { method: "POST", headers: json, body: echoNested(101) });
    assert.equal(deep.status, 400);
    const error = (await deep.json()) as { code: string; message: string };
    assert.equal(error.code, "invalid_argument");
    assert.match(error.message, /nested deeper than 100 levels/);
  });

  test("Connect JSON through the Connect project's handler (a GET, a server stream) is refused the same way", async () => {
    const get = await fetch(
      `${server.httpUrl}/fixture.v1.FixtureService/Echo?connect=v1&encoding=json&message=${encodeURIComponent(echoNested(101))}`,
    );
    assert.equal(get.status, 400);
    assert.match(((await get.json()) as { message: string }).message, /nested deeper than 100 levels/);

    const message = Buffer.from(`{"from":1,"x":${"[".repeat(100)}${"]".repeat(100)}}`);
    const envelope = Buffer.alloc(5);
    envelope.writeUInt32BE(message.length, 1);
    const stream = await fetch(`${server.httpUrl}/fixture.v1.FixtureService/Countdown`, {
      method: "POST",
      headers: { "content-type": "application/connect+json" },
      body: Buffer.concat([envelope, message]),
    });
    const body = Buffer.from(await stream.arrayBuffer());
    // One end-stream envelope (flag 2) carrying the error.
    assert.equal(body[0], 2);
    const end = JSON.parse(body.subarray(5).toString()) as { error: { code: string; message: string } };
    assert.equal(end.error.code, "invalid_argument");
    assert.match(end.error.message, /nested deeper than 100 levels/);
  });

  test("a WebSocket message 101 levels deep ends the call with an error frame of code 3", async () => {
    const ws = new WebSocket(`${server.httpUrl.replace(/^http/, "ws")}/fixture.v1.FixtureService/Chat`, [WS_PROTOCOL]);
    const frames: { error?: { code: number; message: string } }[] = [];
    await new Promise<void>((resolve, reject) => {
      ws.onopen = () => ws.send(`{"text":"a","x":${"[".repeat(100)}${"]".repeat(100)}}`);
      ws.onmessage = (e) => frames.push(JSON.parse(String(e.data)));
      ws.onclose = () => resolve();
      ws.onerror = () => reject(new Error("websocket failed"));
    });
    assert.equal(frames.length, 1);
    assert.equal(frames[0]!.error?.code, Code.INVALID_ARGUMENT);
    assert.match(frames[0]!.error!.message, /nested deeper than 100 levels/);
  });
});
