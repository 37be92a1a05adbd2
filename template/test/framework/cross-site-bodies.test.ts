/**
 * Every HTTP route that runs a handler takes only its protocol's content types: a body a
 * page on another site can post without a CORS preflight (text/plain, a form, multipart, or no type at
 * all) gets 415 with code 3 before any handler runs, on client-streaming and bidi routes as on unary
 * ones. node:http against a real server, in each gateway mode.
 */
import assert from "node:assert/strict";
import { request as httpRequest } from "node:http";
import { after, before, describe, test } from "node:test";
import { Code } from "../../src/framework/index.js";
import { startTestServer, type TestServer } from "../../src/framework/testing/harness.js";
import { fixtureService } from "./fixtures/fixture-service.js";

/** What a cross-site page may send without a preflight (the CORS-safelisted types), and no type. */
const SIMPLE_TYPES = [
  "text/plain",
  "text/plain;charset=UTF-8",
  "application/x-www-form-urlencoded",
  "multipart/form-data; boundary=x",
  undefined,
];

function post(url: string, type: string | undefined, body: string): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const headers: Record<string, string> = type === undefined ? {} : { "content-type": type };
    const req = httpRequest(url, { method: "POST", headers }, (res) => {
      let text = "";
      res.setEncoding("utf8");
      res.on("data", (c: string) => (text += c));
      res.on("end", () => resolve({ status: res.statusCode ?? 0, body: text }));
      res.on("error", reject);
    });
    req.on("error", reject);
    req.end(body);
  });
}

for (const mode of ["tcp", "unix", "in-process"] as const) {
  describe(`request bodies a cross-site page can send without a preflight (gateway mode ${mode})`, () => {
    let server: TestServer;
    before(async () => {
      server = await startTestServer([fixtureService], { GATEWAY_MODE: mode });
    });
    after(() => server.close());

    for (const [kind, path, body] of [
      ["unary", "/api/v1/echo", '{"message":"x"}'],
      ["server-streaming", "/api/v1/countdown", '{"from":1}'],
      ["client-streaming", "/api/v1/sum", '{"value":1}\n{"value":2}\n'],
      ["bidi", "/api/v1/chat", '{"text":"x"}\n'],
    ] as const) {
      test(`a ${kind} route answers text/plain, form, multipart and untyped bodies 415 code 3 without running the handler`, async () => {
        for (const type of SIMPLE_TYPES) {
          const reply = await post(`${server.httpUrl}${path}`, type, body);
          assert.equal(reply.status, 415, `${type}: ${reply.body}`);
          const error = JSON.parse(reply.body) as { code: number; message: string };
          assert.equal(error.code, Code.INVALID_ARGUMENT);
          assert.match(error.message, type === undefined ? /missing Content-Type/ : /unsupported content type/);
        }
      });
    }

    test("streamed bodies declared as NDJSON or JSON (any case, with parameters) are served", async () => {
      for (const type of ["application/x-ndjson", "application/json", "Application/JSON; charset=utf-8"]) {
        const reply = await post(`${server.httpUrl}/api/v1/sum`, type, '{"value":1}\n{"value":2}\n');
        assert.equal(reply.status, 200, `${type}: ${reply.body}`);
        assert.deepEqual(JSON.parse(reply.body), { sum: "3", count: 2 });
      }
    });
  });
}
