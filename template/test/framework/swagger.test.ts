import assert from "node:assert/strict";
import { createServer, request } from "node:http";
import type { AddressInfo } from "node:net";
import { after, before, describe, test } from "node:test";
import SwaggerParser from "@apidevtools/swagger-parser";
import { readPackageJson } from "../../src/framework/health/build-info.js";
import { startTestServer, type TestServer } from "../../src/framework/testing/harness.js";
import { fixtureService } from "./fixtures/fixture-service.js";

const DOC = "/swagger/fixture.swagger.json";
const DOC31 = "/openapi/fixture.openapi.json";

type Doc = {
  paths: Record<string, Record<string, { parameters: Record<string, unknown>[]; [k: string]: unknown }>>;
  definitions: Record<string, { properties: Record<string, unknown> }>;
  [k: string]: unknown;
};

/** A raw GET that sends the path exactly as written (fetch and URL would normalise `..` away). */
function rawGet(base: string, path: string): Promise<{ status: number; headers: Record<string, unknown>; body: string }> {
  const { hostname, port } = new URL(base);
  return new Promise((resolve, reject) => {
    const req = request({ host: hostname, port, path, method: "GET" }, (res) => {
      let body = "";
      res.setEncoding("utf8");
      res.on("data", (c: string) => (body += c));
      res.on("end", () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body }));
    });
    req.on("error", reject);
    req.end();
  });
}

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const srv = createServer();
    srv.listen(0, "127.0.0.1", () => {
      const { port } = srv.address() as AddressInfo;
      srv.close(() => resolve(port));
    });
    srv.on("error", reject);
  });
}

describe("Swagger on the HTTP port", () => {
  let server: TestServer;
  before(async () => {
    server = await startTestServer([fixtureService]);
  });
  after(() => server.close());

  test("the OpenAPI document of FixtureService is valid and describes its routes", async () => {
    const res = await fetch(`${server.httpUrl}${DOC}`);
    assert.equal(res.status, 200);
    assert.match(res.headers.get("content-type") ?? "", /^application\/json/);
    const doc = (await res.json()) as Doc;
    await SwaggerParser.validate(structuredClone(doc) as never);

    assert.equal(doc.swagger, "2.0");
    assert.deepEqual((doc.info as { title: string }).title, readPackageJson().name);
    assert.deepEqual(doc.paths["/api/v1/echo"]!.post!.parameters, [
      { name: "body", in: "body", required: true, schema: { $ref: "#/definitions/fixture.v1.EchoRequest" } },
    ]);
    assert.deepEqual(doc.paths["/api/v1/echo/{message}"]!.get!.parameters[0], {
      name: "message",
      in: "path",
      required: true,
      type: "string",
      minLength: 1,
      maxLength: 1024,
    });
    const countdown = doc.paths["/api/v1/countdown/{from}"]!.get!;
    assert.equal(countdown["x-stream"], "server");
    assert.deepEqual(countdown.produces, ["application/x-ndjson", "text/event-stream"]);
    assert.deepEqual(doc.definitions["fixture.v1.EchoResponse"]!.properties.receivedAt, {
      type: "string",
      format: "date-time",
      description: "RFC 3339 timestamp, e.g. 2026-01-02T03:04:05.678Z",
    });
    assert.equal(doc.securityDefinitions, undefined);
    assert.equal(doc.security, undefined);
  });

  test("/swagger redirects to /swagger/, which serves Swagger UI from swagger-ui-dist", async () => {
    const redirect = await fetch(`${server.httpUrl}/swagger`, { redirect: "manual" });
    assert.equal(redirect.status, 301);
    assert.equal(new URL(redirect.headers.get("location")!, `${server.httpUrl}/swagger`).pathname, "/swagger/");

    const page = await fetch(`${server.httpUrl}/swagger/`);
    assert.equal(page.status, 200);
    assert.match(page.headers.get("content-type") ?? "", /^text\/html/);
    assert.match(page.headers.get("content-security-policy") ?? "", /script-src 'self'/);
    const html = await page.text();
    assert.ok(html.includes(`<title>${readPackageJson().name} API · Swagger UI</title>`));
    assert.match(html, /swagger-ui-bundle\.js/);
    assert.doesNotMatch(html, /https?:\/\//, "no external resources");

    const init = await (await fetch(`${server.httpUrl}/swagger/swagger-initializer.js`)).text();
    // The UI opens the 3.1 document; the 2.0 one stays a choice.
    assert.match(
      init,
      /urls: \[\{"url":"\.\.\/openapi\/fixture\.openapi\.json","name":"OpenAPI 3\.1"\},\{"url":"\.\/fixture\.swagger\.json"/,
    );
    assert.match(init, /validatorUrl: null/);

    const bundle = await fetch(`${server.httpUrl}/swagger/swagger-ui-bundle.js`);
    assert.equal(bundle.status, 200);
    assert.match(bundle.headers.get("content-type") ?? "", /^text\/javascript/);
    assert.ok((await bundle.arrayBuffer()).byteLength > 100_000);
    const css = await fetch(`${server.httpUrl}/swagger/swagger-ui.css`);
    assert.match(css.headers.get("content-type") ?? "", /^text\/css/);
    await css.arrayBuffer();
  });

  test("the OpenAPI 3.1 document is served at /openapi/<stem>.openapi.json beside the 2.0 one, and is valid", async () => {
    const res = await fetch(`${server.httpUrl}${DOC31}`);
    assert.equal(res.status, 200);
    assert.match(res.headers.get("content-type") ?? "", /^application\/json/);
    const doc = (await res.json()) as Doc;
    await SwaggerParser.validate(structuredClone(doc) as never);
    assert.equal(doc.openapi, "3.1.1");
    assert.ok(doc.paths["/api/v1/echo"]?.post);
    assert.equal((await fetch(`${server.httpUrl}/openapi/other.openapi.json`)).status, 404);
    const again = await fetch(`${server.httpUrl}${DOC31}`, { headers: { "if-none-match": res.headers.get("etag")! } });
    assert.equal(again.status, 304);
  });

  test("an unchanged file answers 304 to If-None-Match", async () => {
    const first = await fetch(`${server.httpUrl}/swagger/swagger-ui.css`);
    await first.arrayBuffer();
    const etag = first.headers.get("etag");
    assert.ok(etag);
    const second = await fetch(`${server.httpUrl}/swagger/swagger-ui.css`, { headers: { "if-none-match": etag } });
    assert.equal(second.status, 304);
  });

  test("only the UI's own files are served: traversal and other package files get 404", async () => {
    for (const path of [
      "/swagger/../../package.json",
      "/swagger/../package.json",
      "/swagger/%2e%2e/%2e%2e/package.json",
      "/swagger/%2e%2e%2f%2e%2e%2fpackage.json",
      "/swagger/..%2f..%2fpackage.json",
      "/swagger/..%5c..%5cpackage.json",
      "/swagger/%252e%252e%252fpackage.json",
      "/swagger/package.json",
      "/swagger/swagger-ui-bundle.js.map",
      "/swagger/absolute-path.js",
      "/swagger/index.js",
      "/swagger/README.md",
      "/swagger/__proto__",
      "/swagger/constructor",
      "/swagger/.%2Fswagger-ui.css",
      "/swagger/swagger-ui.css%00.json",
    ]) {
      const res = await rawGet(server.httpUrl, path);
      assert.equal(res.status, 404, `${path} → ${res.status}`);
      assert.deepEqual(JSON.parse(res.body).code, 5, path);
      assert.doesNotMatch(res.body, /"version"|"dependencies"|swagger-ui-dist/, path);
    }
  });
});

describe("Swagger with auth on", () => {
  test("JWT and API keys add security schemes, applied to every operation", async () => {
    const server = await startTestServer([fixtureService], { JWT_SECRET: "0123456789abcdef0123456789abcdef", API_KEYS: "k1,k2" });
    try {
      const doc = (await (await fetch(`${server.httpUrl}${DOC}`)).json()) as Doc;
      await SwaggerParser.validate(structuredClone(doc) as never);
      assert.deepEqual(Object.keys(doc.securityDefinitions as object), ["BearerAuth", "ApiKeyAuth"]);
      assert.deepEqual(doc.security, [{ BearerAuth: [] }, { ApiKeyAuth: [] }]);
      assert.match((doc.securityDefinitions as { ApiKeyAuth: { description: string } }).ApiKeyAuth.description, /HTTP_HEADER_PREFIXES/);
      assert.doesNotMatch(JSON.stringify(doc), /0123456789abcdef|k1,k2/, "no secrets in the document");
      const doc31 = (await (await fetch(`${server.httpUrl}${DOC31}`)).json()) as Doc & {
        components: { securitySchemes: Record<string, unknown> };
      };
      await SwaggerParser.validate(structuredClone(doc31) as never);
      assert.deepEqual(Object.keys(doc31.components.securitySchemes), ["BearerAuth", "ApiKeyAuth"]);
      assert.deepEqual(doc31.paths["/api/v1/echo"]!.post!.security, [{ BearerAuth: [] }, { ApiKeyAuth: [] }]);
      assert.doesNotMatch(JSON.stringify(doc31), /0123456789abcdef|k1,k2/, "no secrets in the 3.1 document");
    } finally {
      await server.close();
    }
  });

  test("API keys alone: the x-api-key scheme, plain when the gateway forwards the header", async () => {
    const server = await startTestServer([fixtureService], { API_KEYS: "k1", HTTP_HEADER_PREFIXES: "X-Api-Key" });
    try {
      const doc = (await (await fetch(`${server.httpUrl}${DOC}`)).json()) as Doc;
      assert.deepEqual(doc.securityDefinitions, {
        ApiKeyAuth: { type: "apiKey", in: "header", name: "x-api-key", description: "One of the service's API keys." },
      });
      assert.deepEqual(doc.security, [{ ApiKeyAuth: [] }]);
    } finally {
      await server.close();
    }
  });

  test("JWT alone adds only the bearer scheme", async () => {
    const server = await startTestServer([fixtureService], { JWT_SECRET: "0123456789abcdef0123456789abcdef" });
    try {
      const doc = (await (await fetch(`${server.httpUrl}${DOC}`)).json()) as Doc;
      assert.deepEqual(doc.securityDefinitions, {
        BearerAuth: {
          type: "apiKey",
          in: "header",
          name: "Authorization",
          description: "A JWT: paste the token alone, as `make token` prints it; it is sent as `Authorization: Bearer` and the token.",
        },
      });
    } finally {
      await server.close();
    }
  });
});

describe("Swagger with ADMIN_PORT", () => {
  let server: TestServer;
  before(async () => {
    server = await startTestServer([fixtureService], { ADMIN_PORT: "0" });
  });
  after(() => server.close());

  test("/swagger/ and the document move to the admin port; the HTTP port answers 404", async () => {
    assert.ok(server.adminUrl);
    assert.equal((await fetch(`${server.adminUrl}/swagger/`)).status, 200);
    const doc = await fetch(`${server.adminUrl}${DOC}`);
    assert.equal(doc.status, 200);
    await SwaggerParser.validate((await doc.json()) as never);
    assert.equal((await fetch(`${server.adminUrl}/swagger`, { redirect: "manual" })).status, 301);
    const doc31 = await fetch(`${server.adminUrl}${DOC31}`);
    assert.equal(doc31.status, 200);
    await SwaggerParser.validate((await doc31.json()) as never);
    for (const path of ["/swagger/", DOC, DOC31, "/swagger/swagger-ui-bundle.js"]) {
      const res = await fetch(`${server.httpUrl}${path}`);
      assert.equal(res.status, 404, path);
      assert.equal(((await res.json()) as { code: number }).code, 5);
    }
  });

  test("with a fixed HTTP port the document names it as the API host (from a well-formed Host only)", async () => {
    const port = await freePort();
    const fixed = await startTestServer([fixtureService], { ADMIN_PORT: "0", HTTP_PORT: String(port) });
    try {
      const doc = (await (await fetch(`${fixed.adminUrl}${DOC}`)).json()) as Doc;
      assert.equal(doc.host, `127.0.0.1:${port}`);
      const doc31 = (await (await fetch(`${fixed.adminUrl}${DOC31}`)).json()) as Doc;
      assert.deepEqual(doc31.servers, [{ url: `http://127.0.0.1:${port}` }]);
      const { hostname, port: adminPort } = new URL(fixed.adminUrl!);
      const forged = await new Promise<string>((resolve, reject) => {
        const req = request({ host: hostname, port: adminPort, path: DOC, headers: { host: "evil.example/<x>" } }, (res) => {
          let body = "";
          res.on("data", (c: Buffer) => (body += c));
          res.on("end", () => resolve(body));
        });
        req.on("error", reject);
        req.end();
      });
      assert.equal((JSON.parse(forged) as Doc).host, undefined);
    } finally {
      await fixed.close();
    }
  });

  test("traversal is refused on the admin port too", async () => {
    for (const path of ["/swagger/../../package.json", "/swagger/%2e%2e%2fpackage.json", "/swagger/..%2F..%2Fpackage.json"]) {
      const res = await rawGet(server.adminUrl!, path);
      assert.equal(res.status, 404, path);
      assert.doesNotMatch(res.body, /"dependencies"/);
    }
  });
});
