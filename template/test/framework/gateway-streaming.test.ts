/**
 * Server streaming over HTTP, in each gateway mode: NDJSON by default, server-sent events when
 * `Accept` lists text/event-stream, a service's own marshaler when it registers one.
 */
import assert from "node:assert/strict";
import { request } from "node:http";
import { after, before, describe, test } from "node:test";
import type { StreamMarshaler } from "../../src/framework/gateway/marshalers.js";
import { type App, Code } from "../../src/framework/index.js";
import { startTestServer, type TestServer } from "../../src/framework/testing/harness.js";
import { fixtureService } from "./fixtures/fixture-service.js";
import { createLibrary } from "./gateway-library.js";

const SSE = { accept: "text/event-stream" };

/**
 * Opens a stream with node:http and resolves with its first chunk; `leave()` drops the connection.
 * (Aborting a fetch makes undici open a spare connection that holds the server's shutdown.)
 */
function openStream(url: string, headers: Record<string, string> = {}): Promise<{ first: string; leave(): void }> {
  return new Promise((resolve, reject) => {
    const req = request(url, { headers }, (res) => {
      res.once("data", (chunk: Buffer) => resolve({ first: chunk.toString(), leave: () => req.destroy() }));
    });
    req.on("error", reject);
    req.end();
  });
}

/** Resolves with the log line `pick` finds, polling the captured logs. */
async function logLine(server: TestServer, pick: (l: Record<string, unknown>) => boolean, timeoutMs = 3000) {
  const until = Date.now() + timeoutMs;
  for (;;) {
    const line = server.logs.find(pick);
    if (line) return line;
    if (Date.now() > until) assert.fail("log line not written");
    await new Promise((r) => setTimeout(r, 5));
  }
}

for (const mode of ["tcp", "unix", "in-process"] as const) {
  describe(`streaming (gateway mode ${mode})`, () => {
    const library = createLibrary();
    let server: TestServer;
    before(async () => {
      server = await startTestServer([fixtureService, library.service], { GATEWAY_MODE: mode });
    });
    after(() => server.close());
    const get = (path: string, headers: Record<string, string> = {}) => fetch(`${server.httpUrl}${path}`, { headers });

    describe("NDJSON", () => {
      test("one {result} line per message, application/x-ndjson, header metadata as Grpc-Metadata-*", async () => {
        const res = await get("/v1/shelves/s1/books:watch?count=2");
        assert.equal(res.status, 200);
        assert.equal(res.headers.get("content-type"), "application/x-ndjson");
        assert.equal(res.headers.get("grpc-metadata-book-source"), "watch");
        assert.equal(
          await res.text(),
          '{"result":{"name":"shelves/s1/books/1","title":"Book 1","id":"0","genre":"GENRE_UNSPECIFIED","tags":[],"labels":{}}}\n' +
            '{"result":{"name":"shelves/s1/books/2","title":"Book 2","id":"0","genre":"GENRE_UNSPECIFIED","tags":[],"labels":{}}}\n',
        );
        assert.deepEqual(library.last()?.request, { parent: "shelves/s1", count: 2 });
      });

      test("with response_body, each result is that field", async () => {
        const res = await get("/v1/shelves/s1/titles:watch?count=2");
        assert.equal(await res.text(), '{"result":"Book 1"}\n{"result":"Book 2"}\n');
      });

      test("each message is flushed as it comes", async () => {
        // The second message comes 10 s after the first: a first chunk holding the first line alone was
        // written before the handler sent more (a buffered stream's first chunk holds every line, at the end).
        const stream = await openStream(`${server.httpUrl}/api/v1/countdown/3?intervalMs=10000`);
        stream.leave();
        assert.equal(stream.first, '{"result":{"remaining":3}}\n');
      });

      test("an error after messages is a last {error} line, status 200", async () => {
        const res = await get("/v1/shelves/s1/books:watch?count=1&failCode=9");
        assert.equal(res.status, 200);
        const lines = (await res.text()).trim().split("\n");
        assert.equal(lines.length, 2);
        assert.deepEqual(JSON.parse(lines[1]!), { error: { code: Code.FAILED_PRECONDITION, message: "watch failed", details: [] } });
      });

      test("an error before the first message is a JSON error with the code's HTTP status", async () => {
        const res = await get("/v1/shelves/s1/books:watch?count=0&failCode=5", { "x-trace-id": `ndjson-first-${mode}` });
        assert.equal(res.status, 404);
        assert.match(res.headers.get("content-type") ?? "", /^application\/json/);
        assert.equal(res.headers.get("x-trace-id"), `ndjson-first-${mode}`);
        assert.deepEqual(await res.json(), { code: Code.NOT_FOUND, message: "watch failed", details: [] });
      });
    });

    describe("server-sent events", () => {
      test("Accept: text/event-stream gives data frames, then `event: end`, with the SSE headers, never compressed", async () => {
        const res = await get("/api/v1/countdown/3", { ...SSE, "accept-encoding": "gzip, br" });
        assert.equal(res.status, 200);
        assert.equal(res.headers.get("content-type"), "text/event-stream");
        assert.equal(res.headers.get("cache-control"), "no-cache");
        assert.equal(res.headers.get("x-accel-buffering"), "no");
        assert.equal(res.headers.get("content-encoding"), null);
        assert.equal(
          await res.text(),
          'data: {"result":{"remaining":3}}\n\ndata: {"result":{"remaining":2}}\n\ndata: {"result":{"remaining":1}}\n\nevent: end\ndata: {}\n\n',
        );
      });

      test("the media type is picked from the Accept list; q=0 refuses it", async () => {
        const listed = await get("/api/v1/countdown/1", { accept: "application/json, text/event-stream;q=0.5" });
        assert.equal(listed.headers.get("content-type"), "text/event-stream");
        await listed.text();
        const refused = await get("/api/v1/countdown/1", { accept: "text/event-stream;q=0, */*" });
        assert.equal(refused.headers.get("content-type"), "application/x-ndjson");
        await refused.text();
      });

      test("a stream that succeeds ends with one `event: end` frame after its last message; a failed one has none", async () => {
        const ok = await (await get("/v1/shelves/s1/titles:watch?count=2", SSE)).text();
        assert.equal(ok, 'data: {"result":"Book 1"}\n\ndata: {"result":"Book 2"}\n\nevent: end\ndata: {}\n\n');
        const failed = await (await get("/v1/shelves/s1/titles:watch?count=1&failCode=8", SSE)).text();
        assert.doesNotMatch(failed, /event: end/);
      });

      test("an error after messages is an `event: error` frame", async () => {
        const res = await get("/v1/shelves/s1/titles:watch?count=1&failCode=8", SSE);
        assert.equal(
          await res.text(),
          'data: {"result":"Book 1"}\n\nevent: error\ndata: {"error":{"code":8,"message":"watch failed","details":[]}}\n\n',
        );
      });

      test("an error before the first message is a JSON error with the code's HTTP status (EventSource does not reconnect)", async () => {
        const res = await get("/v1/shelves/s1/books:watch?count=0&failCode=7", SSE);
        assert.equal(res.status, 403);
        assert.match(res.headers.get("content-type") ?? "", /^application\/json/);
        assert.deepEqual(await res.json(), { code: Code.PERMISSION_DENIED, message: "watch failed", details: [] });
        const invalid = await get("/api/v1/countdown/0", SSE);
        assert.equal(invalid.status, 400);
        assert.equal(((await invalid.json()) as { code: number }).code, Code.INVALID_ARGUMENT);
      });

      test("a client that goes away cancels the call: the handler's signal aborts within 100 ms, logged as Canceled", async () => {
        const trace = `sse-disconnect-${mode}`;
        const stream = await openStream(`${server.httpUrl}/api/v1/countdown/1000?intervalMs=300`, { ...SSE, "x-trace-id": trace });
        assert.match(stream.first, /^data: \{"result":\{"remaining":1000\}\}/);
        const left = Date.now();
        stream.leave();
        const line = await logLine(server, (l) => l.msg === "response time" && l.trace === trace);
        assert.equal(line.grpcCode, "Canceled");
        assert.equal(line.grpcMethod, "/fixture.v1.FixtureService/Countdown");
        const stoppedAfter = Date.parse(String(line["@timestamp"])) - left;
        assert.ok(stoppedAfter < 100, `handler stopped ${stoppedAfter} ms after the client left`);
      });

      test("NDJSON clients that go away cancel the call too", async () => {
        const trace = `ndjson-disconnect-${mode}`;
        const stream = await openStream(`${server.httpUrl}/api/v1/countdown/1000?intervalMs=300`, { "x-trace-id": trace });
        stream.leave();
        assert.equal((await logLine(server, (l) => l.msg === "response time" && l.trace === trace)).grpcCode, "Canceled");
      });
    });
  });
}

describe("SSE heartbeat", () => {
  let server: TestServer;
  const library = createLibrary();
  before(async () => {
    server = await startTestServer([library.service], { SSE_HEARTBEAT_SECONDS: "0.05", GATEWAY_MODE: "in-process" });
  });
  after(() => server.close());

  test("a `: ping` comment every SSE_HEARTBEAT_SECONDS between frames", async () => {
    const res = await fetch(`${server.httpUrl}/v1/shelves/s1/titles:watch?count=2&intervalMs=300`, { headers: SSE });
    const text = await res.text();
    assert.match(text, /^data: \{"result":"Book 1"\}\n\n(: ping\n\n){3,7}data: \{"result":"Book 2"\}\n\nevent: end\ndata: \{\}\n\n$/);
  });

  test("NDJSON has no heartbeat", async () => {
    const res = await fetch(`${server.httpUrl}/v1/shelves/s1/titles:watch?count=2&intervalMs=150`);
    assert.equal(await res.text(), '{"result":"Book 1"}\n{"result":"Book 2"}\n');
  });
});

describe("DISABLE_SSE_MARSHALER=true", () => {
  test("streams are NDJSON whatever Accept says", async (t) => {
    const server = await startTestServer([fixtureService], { DISABLE_SSE_MARSHALER: "true" });
    t.after(() => server.close());
    const res = await fetch(`${server.httpUrl}/api/v1/countdown/1`, { headers: SSE });
    assert.equal(res.headers.get("content-type"), "application/x-ndjson");
    assert.equal(await res.text(), '{"result":{"remaining":1}}\n');
  });
});

describe("a marshaler registered from preStart", () => {
  /** Numbered, named events, so browsers can resume and listen by method. */
  const numbered: StreamMarshaler = {
    headers: { "content-type": "text/event-stream", "cache-control": "no-cache", "x-accel-buffering": "no" },
    message: (json, index, method) => `id: ${index + 1}\nevent: ${method.name}\ndata: ${json}\n\n`,
    error: (status) => `event: failure\ndata: ${status}\n\n`,
  };
  const withMarshaler = {
    ...fixtureService,
    preStart(app: App) {
      app.gateway.registerMarshaler("Text/Event-Stream", numbered);
    },
  };

  const envs: Record<string, string>[] = [{}, { DISABLE_SSE_MARSHALER: "true", GATEWAY_MODE: "tcp" }];
  for (const env of envs) {
    test(`wins over the built-in SSE marshaler (${JSON.stringify(env)})`, async (t) => {
      const server = await startTestServer([withMarshaler], env);
      t.after(() => server.close());
      const res = await fetch(`${server.httpUrl}/api/v1/countdown/2`, { headers: SSE });
      assert.equal(res.headers.get("content-type"), "text/event-stream");
      assert.equal(
        await res.text(),
        'id: 1\nevent: Countdown\ndata: {"remaining":2}\n\nid: 2\nevent: Countdown\ndata: {"remaining":1}\n\n',
      );
      const ndjson = await fetch(`${server.httpUrl}/api/v1/countdown/1`);
      assert.equal(await ndjson.text(), '{"result":{"remaining":1}}\n', "other media types keep their marshaler");
    });
  }

  test("registration after start-up is refused, and so is a bad media type", async (t) => {
    const server = await startTestServer([fixtureService]);
    t.after(() => server.close());
    assert.throws(() => server.app.gateway.registerMarshaler("text/event-stream", numbered), /before the servers start/);
    const app = (await import("../../src/framework/gateway/marshalers.js")).Marshalers;
    assert.throws(() => new app({ sse: true }).registerMarshaler("event-stream", numbered), /not a media type/);
  });
});
