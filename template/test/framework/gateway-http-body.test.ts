/**
 * google.api.HttpBody over the gateway, in each mode: raw response bytes with their own Content-Type
 * (unary, `response_body`, streamed unframed), raw request bodies of any content type, the errors
 * around them, and their OpenAPI description. Other routes keep their JSON-only bodies and 415.
 */
import assert from "node:assert/strict";
import { once } from "node:events";
import { request as httpRequest, type IncomingHttpHeaders, type IncomingMessage } from "node:http";
import { after, before, describe, test } from "node:test";
import { gunzipSync } from "node:zlib";
import SwaggerParser from "@apidevtools/swagger-parser";
import { Code } from "../../src/framework/index.js";
import { startTestServer, type TestServer } from "../../src/framework/testing/harness.js";
import { createLibrary, pattern } from "./gateway-library.js";

interface RawReply {
  status: number;
  headers: IncomingHttpHeaders;
  body: Buffer;
  /** False when the connection closed before the response's end (a truncated chunked body). */
  complete: boolean;
}

/** Opens a request with node:http (raw bytes, exact headers) and resolves with the response as it starts. */
function open(url: string, options: { method?: string; headers?: Record<string, string>; body?: Uint8Array | string } = {}) {
  return new Promise<IncomingMessage>((resolve, reject) => {
    const req = httpRequest(url, { method: options.method ?? "GET", headers: options.headers }, resolve);
    req.on("error", reject);
    req.end(options.body);
  });
}

/** Reads a response to its end, or to its connection closing early. */
async function collect(res: IncomingMessage, first: Buffer[] = []): Promise<RawReply> {
  const chunks = [...first];
  res.on("data", (c: Buffer) => chunks.push(c));
  // "close" comes after "end", or after an "aborted" error when the body was cut short (once() would reject on it).
  res.on("error", () => {});
  await new Promise((resolve) => res.once("close", resolve));
  return { status: res.statusCode ?? 0, headers: res.headers, body: Buffer.concat(chunks), complete: res.complete };
}

async function send(url: string, options: Parameters<typeof open>[1] = {}): Promise<RawReply> {
  return collect(await open(url, options));
}

const json = (reply: RawReply) => JSON.parse(reply.body.toString()) as Record<string, unknown>;
const base64 = (bytes: Uint8Array) => Buffer.from(bytes).toString("base64");

for (const mode of ["tcp", "unix", "in-process"] as const) {
  describe(`google.api.HttpBody (gateway mode ${mode})`, () => {
    const library = createLibrary();
    let server: TestServer;
    before(async () => {
      server = await startTestServer([library.service], { GATEWAY_MODE: mode, GRPC_MAX_RECV_MSG_SIZE: "65536" });
    });
    after(() => server.close());
    const url = (path: string) => `${server.httpUrl}${path}`;

    describe("responses", () => {
      test("a unary HttpBody is its data as it is, with its content type, not JSON", async () => {
        const reply = await send(url("/v1/files/logo?size=300&contentType=image/png"));
        assert.equal(reply.status, 200);
        assert.equal(reply.headers["content-type"], "image/png");
        assert.equal(reply.headers["content-length"], "300");
        assert.equal(reply.headers["grpc-metadata-file-name"], "logo");
        assert.deepEqual(new Uint8Array(reply.body), pattern(300));
      });

      test("no content_type is application/octet-stream; no data is an empty 200", async () => {
        const reply = await send(url("/v1/files/blob?size=5"));
        assert.equal(reply.headers["content-type"], "application/octet-stream");
        assert.deepEqual(new Uint8Array(reply.body), pattern(5));
        const empty = await send(url("/v1/files/none?contentType=text/csv"));
        assert.equal(empty.status, 200);
        assert.equal(empty.headers["content-type"], "text/csv");
        assert.equal(empty.body.length, 0);
      });

      test("a text content type is sent exactly as set (no charset added)", async () => {
        const reply = await send(url("/v1/files/page?size=3&contentType=text/html"));
        assert.equal(reply.headers["content-type"], "text/html");
      });

      test("an error is the usual JSON error with its HTTP status", async () => {
        const reply = await send(url(`/v1/files/gone?failCode=${Code.NOT_FOUND}&contentType=image/png`));
        assert.equal(reply.status, 404);
        assert.match(reply.headers["content-type"] ?? "", /^application\/json/);
        assert.deepEqual(json(reply), { code: Code.NOT_FOUND, message: "download failed", details: [] });
      });

      test("response_body naming an HttpBody field sends that field raw; unset, an empty octet-stream", async () => {
        const reply = await send(url("/v1/attachments/a?size=10&contentType=text/csv"));
        assert.equal(reply.headers["content-type"], "text/csv");
        assert.deepEqual(new Uint8Array(reply.body), pattern(10));
        const unset = await send(url("/v1/attachments/a"));
        assert.equal(unset.status, 200);
        assert.equal(unset.headers["content-type"], "application/octet-stream");
        assert.equal(unset.body.length, 0);
      });

      test("the same message without response_body stays JSON (data as base64)", async () => {
        const reply = await send(url("/v1/attachments/a/metadata?size=3&contentType=text/csv"));
        assert.match(reply.headers["content-type"] ?? "", /^application\/json/);
        assert.deepEqual(json(reply), { name: "a", file: { contentType: "text/csv", data: "AAEC", extensions: [] } });
      });
    });

    describe("streams", () => {
      test("each message's data is written unframed, the first one's content type; Accept picks no marshaler", async () => {
        for (const accept of ["application/x-ndjson", "text/event-stream"]) {
          const reply = await send(url("/v1/streams/s?chunks=one&chunks=two&chunks=three&contentType=text/plain"), {
            headers: { accept, "accept-encoding": "gzip, br" },
          });
          assert.equal(reply.status, 200);
          assert.equal(reply.headers["content-type"], "text/plain", accept);
          assert.equal(reply.headers["transfer-encoding"], "chunked");
          assert.equal(reply.headers["content-encoding"], undefined, "streams are never compressed");
          assert.equal(reply.headers["grpc-metadata-file-name"], "s");
          assert.equal(reply.body.toString(), "onetwothree");
          assert.ok(reply.complete);
        }
      });

      test("a chunk arrives while the stream is still open", async () => {
        const res = await open(url("/v1/streams/held?chunks=first&chunks=second&chunks=third&hold=true&contentType=text/plain"));
        assert.equal(res.statusCode, 200);
        const [first] = (await once(res, "data")) as [Buffer];
        assert.equal(first.toString(), "first");
        assert.equal(res.complete, false);
        // The handler is still waiting: nothing after the first chunk can have been sent.
        assert.equal(library.release(), 1);
        const rest = await collect(res);
        assert.equal(rest.body.toString(), "secondthird");
        assert.ok(rest.complete);
      });

      test("an error before the first message is a JSON error with its HTTP status", async () => {
        const reply = await send(url(`/v1/streams/none?failCode=${Code.PERMISSION_DENIED}`));
        assert.equal(reply.status, 403);
        assert.deepEqual(json(reply), { code: Code.PERMISSION_DENIED, message: "stream failed", details: [] });
      });

      test("an error after the first message cuts the response short: the data sent so far, no end", async () => {
        const reply = await send(url(`/v1/streams/broken?chunks=part-one&chunks=part-two&failCode=${Code.INTERNAL}`));
        assert.equal(reply.status, 200);
        assert.equal(reply.body.toString(), "part-onepart-two", "no error JSON appended");
        assert.equal(reply.complete, false);
      });
    });

    describe("requests", () => {
      test("body naming an HttpBody field: the raw bytes and Content-Type, the rest from path and query", async () => {
        const bytes = pattern(1000);
        const reply = await send(url("/v1/files/report.pdf?note=draft"), {
          method: "PUT",
          headers: { "content-type": "application/pdf" },
          body: bytes,
        });
        assert.equal(reply.status, 200);
        assert.deepEqual(json(reply), { name: "report.pdf", contentType: "application/pdf", size: 1000, note: "draft" });
        assert.deepEqual(library.last()?.request, {
          name: "report.pdf",
          file: { contentType: "application/pdf", data: base64(bytes) },
          note: "draft",
        });
      });

      test('body "*" on an HttpBody request: the request is the raw body; echoed back byte for byte', async () => {
        const bytes = pattern(256);
        const reply = await send(url("/v1/echo"), { method: "POST", headers: { "content-type": "image/webp" }, body: bytes });
        assert.equal(reply.status, 200);
        assert.equal(reply.headers["content-type"], "image/webp");
        assert.deepEqual(new Uint8Array(reply.body), bytes);
      });

      test("JSON and text content types reach an HttpBody route as bytes too, invalid UTF-8 and all", async () => {
        const latin1 = Buffer.from("caf\xe9", "latin1");
        for (const type of ["text/plain; charset=iso-8859-1", "application/json"]) {
          const reply = await send(url("/v1/echo"), { method: "POST", headers: { "content-type": type }, body: latin1 });
          assert.equal(reply.status, 200, type);
          assert.equal(reply.headers["content-type"], type);
          assert.deepEqual(reply.body, latin1);
        }
      });

      test("a body without Content-Type has an empty content_type; no body, empty data", async () => {
        const bytes = Buffer.from("no type");
        const reply = await send(url("/v1/files/x"), { method: "PUT", headers: { "content-length": String(bytes.length) }, body: bytes });
        assert.deepEqual(json(reply), { name: "x", contentType: "", size: bytes.length, note: "" });
        const none = await send(url("/v1/files/y"), { method: "PUT" });
        assert.equal(none.status, 200);
        assert.deepEqual(json(none), { name: "y", contentType: "", size: 0, note: "" });
      });

      test("the body limit still applies: 413 code 8", async () => {
        const reply = await send(url("/v1/echo"), {
          method: "POST",
          headers: { "content-type": "application/octet-stream" },
          body: new Uint8Array(65537),
        });
        assert.equal(reply.status, 413);
        assert.equal(json(reply).code, Code.RESOURCE_EXHAUSTED);
      });

      test("other routes still take only JSON: 415 for other types, 400 for invalid UTF-8", async () => {
        const before = library.seen.length;
        const xml = await send(url("/v1/shelves/s1/books"), {
          method: "POST",
          headers: { "content-type": "application/xml" },
          body: "<book/>",
        });
        assert.equal(xml.status, 415);
        assert.deepEqual(json(xml), {
          code: Code.INVALID_ARGUMENT,
          message: 'unsupported content type "application/xml": send application/json',
          details: [],
        });
        const untyped = await send(url("/v1/shelves/s1/books"), { method: "POST", headers: { "content-length": "2" }, body: "{}" });
        assert.equal(untyped.status, 415);
        const latin1 = await send(url("/v1/shelves/s1/books"), {
          method: "POST",
          headers: { "content-type": "application/json" },
          body: Buffer.from('{"book":{"title":"caf\xe9"}}', "latin1"),
        });
        assert.equal(latin1.status, 400);
        assert.deepEqual(json(latin1), { code: Code.INVALID_ARGUMENT, message: "request body is not valid UTF-8", details: [] });
        const ok = await send(url("/v1/shelves/s1/books?bookId=7"), {
          method: "POST",
          headers: { "content-type": "application/json" },
          body: '{"title":"Dune"}',
        });
        assert.equal(ok.status, 200);
        assert.equal(json(ok).title, "Dune");
        assert.equal(library.seen.length, before + 1, "only the JSON request reached the handler");
      });
    });
  });
}

describe("google.api.HttpBody: compression and OpenAPI", () => {
  const library = createLibrary();
  let server: TestServer;
  before(async () => {
    server = await startTestServer([library.service]);
  });
  after(() => server.close());
  const url = (path: string) => `${server.httpUrl}${path}`;
  const gzip = { "accept-encoding": "gzip" };

  test("a unary HttpBody is compressed only when its content type is text-like", async () => {
    const text = await send(url("/v1/files/big?size=4096&contentType=text/plain"), { headers: gzip });
    assert.equal(text.headers["content-encoding"], "gzip");
    assert.equal(text.headers["content-type"], "text/plain");
    assert.deepEqual(new Uint8Array(gunzipSync(text.body)), pattern(4096));
    const png = await send(url("/v1/files/big?size=4096&contentType=image/png"), { headers: gzip });
    assert.equal(png.headers["content-encoding"], undefined);
    assert.deepEqual(new Uint8Array(png.body), pattern(4096));
  });

  test("a streamed HttpBody is never compressed, whatever its type", async () => {
    const chunk = "x".repeat(2048);
    const reply = await send(url(`/v1/streams/big?chunks=${chunk}&chunks=${chunk}&contentType=text/plain`), { headers: gzip });
    assert.equal(reply.headers["content-encoding"], undefined);
    assert.equal(reply.body.toString(), chunk + chunk);
  });

  test("OpenAPI: HttpBody responses and requests are binary of any media type; the document validates", async () => {
    const doc = (await (await fetch(url("/swagger/gatewaytest.swagger.json"))).json()) as {
      paths: Record<string, Record<string, Record<string, unknown> & { parameters: Record<string, unknown>[] }>>;
      definitions: Record<string, unknown>;
    };
    await SwaggerParser.validate(structuredClone(doc) as never);
    const binary = { type: "string", format: "binary" };
    const download = doc.paths["/v1/files/{name}"]!.get!;
    assert.deepEqual(download.produces, ["*/*"]);
    assert.deepEqual((download.responses as Record<string, { schema: unknown }>)["200"]!.schema, binary);
    const attachment = doc.paths["/v1/attachments/{name}"]!.get!;
    assert.deepEqual((attachment.responses as Record<string, { schema: unknown }>)["200"]!.schema, binary);
    const metadata = doc.paths["/v1/attachments/{name}/metadata"]!.get!;
    assert.deepEqual((metadata.responses as Record<string, { schema: unknown }>)["200"]!.schema, {
      $ref: "#/definitions/gatewaytest.v1.Attachment",
    });
    const stream = doc.paths["/v1/streams/{name}"]!.get!;
    assert.deepEqual(stream.produces, ["*/*"]);
    assert.equal(stream["x-stream"], "server");
    assert.deepEqual((stream.responses as Record<string, { schema: unknown }>)["200"]!.schema, binary);
    const upload = doc.paths["/v1/files/{name}"]!.put!;
    assert.deepEqual(upload.consumes, ["*/*"]);
    assert.deepEqual(
      upload.parameters.find((p) => p.in === "body"),
      { name: "file", in: "body", required: false, schema: binary },
    );
    assert.deepEqual(
      upload.parameters.filter((p) => p.in === "query").map((p) => p.name),
      ["note"],
    );
    const echo = doc.paths["/v1/echo"]!.post!;
    assert.deepEqual(echo.consumes, ["*/*"]);
    assert.deepEqual(echo.produces, ["*/*"]);
    assert.equal(doc.paths["/v1/{parent}/books"]!.post!.consumes, undefined, "other routes keep the document's JSON");
  });
});
