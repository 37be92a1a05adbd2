/**
 * CORS on the HTTP port: exact preflight and actual-request headers for an allowed origin, nothing
 * for any other, the `*` form, credentials, the admin port's own origin, and the config check that
 * refuses `*` with credentials.
 */
import assert from "node:assert/strict";
import { once } from "node:events";
import { connect as connectHttp2 } from "node:http2";
import { after, before, describe, test } from "node:test";
import { loadConfig } from "../../src/framework/config/load.js";
import { startTestServer, type TestServer } from "../../src/framework/testing/harness.js";
import { createLibrary } from "./gateway-library.js";

const APP = "https://app.example.com";
const CORS_HEADERS = [
  "access-control-allow-origin",
  "access-control-allow-credentials",
  "access-control-allow-methods",
  "access-control-allow-headers",
  "access-control-max-age",
  "access-control-expose-headers",
];
const ALLOW_HEADERS =
  "content-type, authorization, x-api-key, connect-protocol-version, connect-timeout-ms, x-grpc-web, x-user-agent, grpc-timeout, x-trace-id, x-debug-log-level";
const EXPOSE_HEADERS = "grpc-status, grpc-message, grpc-status-details-bin, retry-after, www-authenticate, x-trace-id";

function corsHeaders(res: Response): Record<string, string> {
  const out: Record<string, string> = {};
  for (const name of CORS_HEADERS) {
    const value = res.headers.get(name);
    if (value !== null) out[name] = value;
  }
  return out;
}

function preflight(url: string, origin: string, method = "POST"): Promise<Response> {
  return fetch(url, {
    method: "OPTIONS",
    headers: { origin, "access-control-request-method": method, "access-control-request-headers": "content-type,x-trace-id" },
  });
}

describe("CORS with a list of origins", () => {
  let server: TestServer;
  before(async () => {
    server = await startTestServer([createLibrary().service], {
      CORS_ALLOWED_ORIGINS: `${APP}, http://localhost:5173`,
      CORS_MAX_AGE_SECONDS: "120",
    });
  });
  after(() => server.close());

  test("a preflight from an allowed origin lists the matched route's methods and the allowed headers", async () => {
    const res = await preflight(`${server.httpUrl}/v1/shelves/1/books/2`, APP, "PATCH");
    assert.equal(res.status, 204);
    assert.deepEqual(corsHeaders(res), {
      "access-control-allow-origin": APP,
      "access-control-allow-methods": "DELETE, GET, PATCH",
      "access-control-allow-headers": ALLOW_HEADERS,
      "access-control-max-age": "120",
    });
    assert.equal(res.headers.get("vary"), "Origin");
    assert.equal(await res.text(), "");
  });

  test("an actual request from an allowed origin gets the origin and the exposed headers", async () => {
    const res = await fetch(`${server.httpUrl}/v1/shelves/1/books/2`, { headers: { origin: "http://localhost:5173" } });
    assert.equal(res.status, 200);
    assert.deepEqual(corsHeaders(res), {
      "access-control-allow-origin": "http://localhost:5173",
      "access-control-expose-headers": EXPOSE_HEADERS,
    });
    assert.match(res.headers.get("vary") ?? "", /Origin/);
  });

  test("errors carry the CORS headers too, so a page can read them", async () => {
    const res = await fetch(`${server.httpUrl}/v1/nowhere`, { headers: { origin: APP } });
    assert.equal(res.status, 404);
    assert.equal(res.headers.get("access-control-allow-origin"), APP);
  });

  test("a disallowed origin gets no CORS header, on a preflight or an actual request", async () => {
    for (const origin of ["https://evil.example.com", "https://app.example.com.evil.example.com", "null", `${APP}/`]) {
      const pre = await preflight(`${server.httpUrl}/v1/shelves/1/books/2`, origin);
      assert.deepEqual(corsHeaders(pre), {}, origin);
      assert.equal(pre.status, 405, "the preflight goes on to the gateway, which does not serve OPTIONS there");
      const res = await fetch(`${server.httpUrl}/v1/shelves/1/books/2`, { headers: { origin } });
      assert.equal(res.status, 200);
      assert.deepEqual(corsHeaders(res), {}, origin);
    }
  });

  test("a preflight to a path nothing serves is not answered as CORS", async () => {
    const res = await preflight(`${server.httpUrl}/v1/nowhere`, APP);
    assert.equal(res.status, 404);
    assert.equal(res.headers.get("access-control-allow-methods"), null);
  });

  test("a request without Origin gets no CORS header", async () => {
    const res = await fetch(`${server.httpUrl}/v1/shelves/1/books/2`);
    assert.deepEqual(corsHeaders(res), {});
  });
});

describe("CORS with * and with credentials", () => {
  test("* answers any origin with *, never with credentials", async () => {
    const server = await startTestServer([createLibrary().service], { CORS_ALLOWED_ORIGINS: "*" });
    try {
      const res = await fetch(`${server.httpUrl}/v1/shelves/1/books/2`, { headers: { origin: "https://anyone.example" } });
      assert.deepEqual(corsHeaders(res), { "access-control-allow-origin": "*", "access-control-expose-headers": EXPOSE_HEADERS });
      assert.equal(res.headers.get("vary"), null);
    } finally {
      await server.close();
    }
  });

  test("CORS_ALLOW_CREDENTIALS=true adds Access-Control-Allow-Credentials for allowed origins only", async () => {
    const server = await startTestServer([createLibrary().service], { CORS_ALLOWED_ORIGINS: APP, CORS_ALLOW_CREDENTIALS: "true" });
    try {
      const ok = await preflight(`${server.httpUrl}/v1/shelves/1/books`, APP);
      assert.equal(ok.headers.get("access-control-allow-credentials"), "true");
      assert.equal(ok.headers.get("access-control-allow-methods"), "GET, POST");
      const other = await fetch(`${server.httpUrl}/v1/shelves/1/books/2`, { headers: { origin: "https://evil.example.com" } });
      assert.deepEqual(corsHeaders(other), {});
    } finally {
      await server.close();
    }
  });

  test("the config refuses * with credentials, and origins that could never match", () => {
    assert.throws(
      () => loadConfig({ CORS_ALLOWED_ORIGINS: "*", CORS_ALLOW_CREDENTIALS: "true" }),
      /CORS_ALLOW_CREDENTIALS: cannot be true with CORS_ALLOWED_ORIGINS=\*/,
    );
    for (const bad of ["https://app.example.com/", "app.example.com", "https://*.example.com", "ftp://x.example", "*,https://a.example"]) {
      assert.throws(() => loadConfig({ CORS_ALLOWED_ORIGINS: bad }), /CORS_ALLOWED_ORIGINS: expected \*/, bad);
    }
    assert.deepEqual(loadConfig({}).CORS_ALLOWED_ORIGINS, []);
  });
});

describe("CORS_EXPOSED_HEADERS", () => {
  test("adds the named response headers to the defaults a page may read", async () => {
    const server = await startTestServer([createLibrary().service], {
      CORS_ALLOWED_ORIGINS: APP,
      CORS_EXPOSED_HEADERS: "X-Request-Cost, trailer-x-request-cost",
    });
    try {
      const res = await fetch(`${server.httpUrl}/v1/shelves/1/books/2`, { headers: { origin: APP } });
      assert.equal(res.headers.get("access-control-expose-headers"), `${EXPOSE_HEADERS}, x-request-cost, trailer-x-request-cost`);
    } finally {
      await server.close();
    }
  });

  test("the config takes header names only", () => {
    for (const bad of ["*", "x-a, bad header", "x:y"]) {
      assert.throws(
        () => loadConfig({ CORS_EXPOSED_HEADERS: bad }),
        /CORS_EXPOSED_HEADERS: expected a comma list of HTTP header names/,
        bad,
      );
    }
    assert.deepEqual(loadConfig({}).CORS_EXPOSED_HEADERS, []);
  });
});

describe("CORS off (the default) and the admin port", () => {
  test("with no origins configured, nothing is added", async () => {
    const server = await startTestServer([createLibrary().service]);
    try {
      const res = await preflight(`${server.httpUrl}/v1/shelves/1/books/2`, APP);
      assert.deepEqual(corsHeaders(res), {});
      assert.equal(res.headers.get("vary"), null);
    } finally {
      await server.close();
    }
  });

  test("with ADMIN_PORT, the admin port's origin on the same host may call the HTTP port (Swagger UI's Try it out)", async () => {
    const server = await startTestServer([createLibrary().service], { ADMIN_PORT: "0" });
    try {
      const admin = new URL(server.adminUrl!);
      const res = await preflight(`${server.httpUrl}/v1/shelves/1/books`, admin.origin);
      assert.equal(res.status, 204);
      assert.equal(res.headers.get("access-control-allow-origin"), admin.origin);
      assert.equal(res.headers.get("access-control-allow-methods"), "GET, POST");
      // The same port on another host name is someone else.
      const other = await preflight(`${server.httpUrl}/v1/shelves/1/books`, `http://evil.example:${admin.port}`);
      assert.deepEqual(corsHeaders(other), {});
      // Over HTTP/2 the host is in :authority.
      const session = connectHttp2(server.httpUrl);
      try {
        const stream = session.request({
          ":method": "OPTIONS",
          ":path": "/v1/shelves/1/books",
          origin: admin.origin,
          "access-control-request-method": "POST",
        });
        stream.end();
        const [headers] = (await once(stream, "response")) as [Record<string, string>];
        stream.resume();
        assert.equal(headers[":status"], 204);
        assert.equal(headers["access-control-allow-origin"], admin.origin);
      } finally {
        session.close();
      }
    } finally {
      await server.close();
    }
  });
});
