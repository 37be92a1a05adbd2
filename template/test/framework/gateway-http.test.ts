/**
 * HTTP edge of the gateway in each mode: headers ↔ metadata, trailers with `TE: trailers`,
 * `Grpc-Timeout`, and response compression.
 */
import assert from "node:assert/strict";
import { request as httpRequest, type IncomingHttpHeaders } from "node:http";
import { after, before, describe, test } from "node:test";
import { brotliDecompressSync, gunzipSync } from "node:zlib";
import { Code } from "../../src/framework/index.js";
import { startTestServer, type TestServer } from "../../src/framework/testing/harness.js";
import { fixtureService } from "./fixtures/fixture-service.js";
import { createLibrary } from "./gateway-library.js";

interface RawReply {
  status: number;
  headers: IncomingHttpHeaders;
  trailers: NodeJS.Dict<string>;
  body: Buffer;
}

/** node:http, not fetch: it shows trailers, raw (compressed) bytes, and sends latin-1 header values as they are. */
function send(url: string, options: { method?: string; headers?: Record<string, string>; body?: string } = {}): Promise<RawReply> {
  return new Promise((resolve, reject) => {
    const req = httpRequest(url, { method: options.method ?? "GET", headers: options.headers }, (res) => {
      const chunks: Buffer[] = [];
      res.on("data", (c: Buffer) => chunks.push(c));
      res.on("end", () =>
        resolve({ status: res.statusCode ?? 0, headers: res.headers, trailers: res.trailers, body: Buffer.concat(chunks) }),
      );
      res.on("error", reject);
    });
    req.on("error", reject);
    req.end(options.body);
  });
}

const json = (reply: RawReply) => JSON.parse(reply.body.toString()) as Record<string, unknown>;

for (const mode of ["tcp", "unix", "in-process"] as const) {
  describe(`HTTP headers (gateway mode ${mode})`, () => {
    const library = createLibrary();
    let server: TestServer;
    before(async () => {
      server = await startTestServer([fixtureService, library.service], { GATEWAY_MODE: mode, HTTP_HEADER_PREFIXES: "X-Tenant-" });
    });
    after(() => server.close());
    const url = (path: string) => `${server.httpUrl}${path}`;

    test("authorization, trace, W3C, Grpc-Metadata-* (prefix stripped, -bin as base64) and prefixed headers become metadata; others do not", async () => {
      const reply = await send(url("/v1/query"), {
        headers: {
          authorization: "Bearer t0k3n",
          "x-trace-id": `md-${mode}`,
          traceparent: "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
          "grpc-metadata-color": "blue",
          "grpc-metadata-blob-bin": Buffer.from("hi\u0000").toString("base64"),
          "x-tenant-id": "t-1",
          "x-other": "dropped",
          cookie: "dropped=1",
        },
      });
      assert.equal(reply.status, 200);
      assert.deepEqual(library.last()?.metadata, {
        authorization: "Bearer t0k3n",
        "x-trace-id": `md-${mode}`,
        traceparent: "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
        color: "blue",
        "blob-bin": `base64:${Buffer.from("hi\u0000").toString("base64")}`,
        "x-tenant-id": "t-1",
      });
    });

    test("a non-ASCII Grpc-Metadata value or a key gRPC cannot carry is dropped, not fatal", async () => {
      const reply = await send(url("/v1/query"), {
        headers: { "grpc-metadata-location": "Gjøvik", "grpc-metadata-foo+bar": "x", "grpc-metadata-ok": "yes" },
      });
      assert.equal(reply.status, 200);
      assert.deepEqual(library.last()?.metadata, { ok: "yes" });
    });

    test("response header metadata comes back as Grpc-Metadata-*, the trace ID in its own header; no trailers without TE", async () => {
      const reply = await send(url("/v1/shelves/s1/books/b1"), { headers: { "x-trace-id": `echo-${mode}` } });
      assert.equal(reply.status, 200);
      assert.equal(reply.headers["grpc-metadata-book-source"], "shelf");
      assert.equal(reply.headers["x-trace-id"], `echo-${mode}`);
      assert.equal(reply.headers["grpc-metadata-x-trace-id"], undefined);
      assert.deepEqual(reply.trailers, {});
      assert.equal(reply.headers.trailer, undefined);
    });

    test("with TE: trailers, trailer metadata comes as HTTP trailers Grpc-Trailer-*", async () => {
      const reply = await send(url("/v1/shelves/s1/books/b1"), { headers: { te: "trailers" } });
      assert.equal(reply.status, 200);
      assert.equal(reply.headers["transfer-encoding"], "chunked");
      assert.match(String(reply.headers.trailer), /grpc-trailer-book-checksum/i);
      assert.deepEqual(reply.trailers, { "grpc-trailer-book-checksum": "c0ffee" });
      assert.equal(json(reply).name, "shelves/s1/books/b1");
    });

    test("an error keeps the trace header; its metadata (sent trailers-only) comes as trailers only with TE", async () => {
      const headers = { "x-trace-id": `err-${mode}` };
      const plain = await send(url("/v1/shelves/s1/books/missing"), { method: "DELETE", headers });
      assert.equal(plain.status, 404);
      assert.equal(plain.headers["x-trace-id"], `err-${mode}`);
      assert.deepEqual(json(plain), { code: Code.NOT_FOUND, message: "no such book", details: [] });
      assert.deepEqual(plain.trailers, {});
      const withTe = await send(url("/v1/shelves/s1/books/missing"), { method: "DELETE", headers: { ...headers, te: "trailers" } });
      assert.equal(withTe.status, 404);
      assert.deepEqual(json(withTe), { code: Code.NOT_FOUND, message: "no such book", details: [] });
      assert.equal(withTe.trailers["grpc-trailer-book-checksum"], "none");
      assert.equal(withTe.trailers["grpc-trailer-book-source"], "shelf");
    });

    test("a stream sends its trailers after the last line with TE: trailers", async () => {
      const reply = await send(url("/v1/shelves/s1/titles:watch?count=2"), { headers: { te: "trailers" } });
      assert.equal(reply.body.toString(), '{"result":"Book 1"}\n{"result":"Book 2"}\n');
      assert.equal(reply.trailers["grpc-trailer-book-count"], "2");
      const none = await send(url("/v1/shelves/s1/titles:watch?count=2"));
      assert.deepEqual(none.trailers, {});
    });

    test("Grpc-Timeout sets the call's deadline: a slow unary call is 504 code 4 when it passes", async () => {
      const started = Date.now();
      const reply = await send(url("/api/v1/echo"), {
        method: "POST",
        headers: { "content-type": "application/json", "grpc-timeout": "150m" },
        body: JSON.stringify({ message: "slow", delayMs: 5000 }),
      });
      assert.equal(reply.status, 504);
      assert.equal(json(reply).code, Code.DEADLINE_EXCEEDED);
      assert.ok(Date.now() - started < 2000, `answered after ${Date.now() - started} ms`);
      const fast = await send(url("/api/v1/echo"), {
        method: "POST",
        headers: { "content-type": "application/json", "grpc-timeout": "2S" },
        body: JSON.stringify({ message: "fast" }),
      });
      assert.equal(fast.status, 200);
    });

    test("Grpc-Timeout ends a stream with a DEADLINE_EXCEEDED error line", async () => {
      const started = Date.now();
      const reply = await send(url("/v1/shelves/s1/titles:watch?count=100&intervalMs=50"), { headers: { "grpc-timeout": "300m" } });
      assert.equal(reply.status, 200);
      const lines = reply.body.toString().trim().split("\n");
      assert.ok(lines.length > 2 && lines.length < 100, `${lines.length} lines`);
      assert.equal((JSON.parse(lines[lines.length - 1]!) as { error: { code: number } }).error.code, Code.DEADLINE_EXCEEDED);
      assert.ok(Date.now() - started < 2000, `ended after ${Date.now() - started} ms`);
    });

    test("an invalid Grpc-Timeout is 400 code 3 and the handler is not called", async () => {
      for (const value of ["INVALID", "10", "1x", "123456789S", "-1S", "1.5S"]) {
        const before = library.seen.length;
        const reply = await send(url("/v1/query"), { headers: { "grpc-timeout": value } });
        assert.equal(reply.status, 400, value);
        assert.equal(json(reply).code, Code.INVALID_ARGUMENT);
        assert.match(String(json(reply).message), /Grpc-Timeout/);
        assert.equal(library.seen.length, before);
      }
    });
  });
}

describe("compression", () => {
  const library = createLibrary();
  let server: TestServer;
  let off: TestServer;
  before(async () => {
    server = await startTestServer([library.service]);
    off = await startTestServer([library.service], { DISABLE_HTTP_COMPRESSION: "true" });
  });
  after(async () => {
    await server.close();
    await off.close();
  });
  const BIG = "/v1/shelves/s1/books?pageSize=20"; // about 5 KiB of JSON
  const SMALL = "/v1/shelves/s1/books/b1"; // about 200 bytes

  test("a JSON response of 1 KiB or more is gzip or brotli compressed when accepted", async () => {
    const plain = await send(`${server.httpUrl}${BIG}`);
    assert.equal(plain.headers["content-encoding"], undefined);
    assert.ok(plain.body.length > 1024, `${plain.body.length} bytes`);
    const gzip = await send(`${server.httpUrl}${BIG}`, { headers: { "accept-encoding": "gzip" } });
    assert.equal(gzip.headers["content-encoding"], "gzip");
    assert.match(String(gzip.headers.vary), /accept-encoding/i);
    assert.ok(gzip.body.length < plain.body.length / 4, `${gzip.body.length} of ${plain.body.length} bytes`);
    assert.deepEqual(gunzipSync(gzip.body), plain.body);
    const br = await send(`${server.httpUrl}${BIG}`, { headers: { "accept-encoding": "gzip, deflate, br" } });
    assert.equal(br.headers["content-encoding"], "br");
    assert.deepEqual(brotliDecompressSync(br.body), plain.body);
  });

  test("the 1 KiB threshold counts UTF-8 bytes: 400 characters of 3 bytes each are compressed", async () => {
    const title = "\u6f22".repeat(400); // 1,200 bytes, 400 UTF-16 units
    const res = await send(`${server.httpUrl}/v1/shelves/s1/books`, {
      method: "POST",
      headers: { "content-type": "application/json", "accept-encoding": "gzip" },
      body: JSON.stringify({ title }),
    });
    assert.equal(res.status, 200);
    assert.equal(res.headers["content-encoding"], "gzip");
    assert.equal((JSON.parse(gunzipSync(res.body).toString("utf8")) as { title: string }).title, title);
  });

  test("small responses, errors and streams are never compressed", async () => {
    const headers = { "accept-encoding": "gzip, br" };
    const small = await send(`${server.httpUrl}${SMALL}`, { headers });
    assert.equal(small.status, 200);
    assert.equal(small.headers["content-encoding"], undefined);
    const error = await send(`${server.httpUrl}/v1/query?int32Value=x`, { headers });
    assert.equal(error.status, 400);
    assert.equal(error.headers["content-encoding"], undefined);
    for (const accept of ["application/x-ndjson", "text/event-stream"]) {
      const stream = await send(`${server.httpUrl}/v1/shelves/s1/books:watch?count=30`, { headers: { ...headers, accept } });
      assert.ok(stream.body.length > 1024);
      assert.equal(stream.headers["content-encoding"], undefined, accept);
    }
  });

  test("DISABLE_HTTP_COMPRESSION=true turns it off", async () => {
    const reply = await send(`${off.httpUrl}${BIG}`, { headers: { "accept-encoding": "gzip, br" } });
    assert.equal(reply.status, 200);
    assert.equal(reply.headers["content-encoding"], undefined);
  });

  test("with TE: trailers a compressed response still carries its trailers", async () => {
    const reply = await send(`${server.httpUrl}/v1/shelves/s1/books/b1`, { headers: { "accept-encoding": "gzip", te: "trailers" } });
    assert.equal(reply.trailers["grpc-trailer-book-checksum"], "c0ffee");
  });
});
