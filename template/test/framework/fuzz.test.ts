/**
 * Bad input never hurts the process: hundreds of malformed HTTP requests over raw sockets and
 * malformed gRPC frames over raw HTTP/2, each answered with a 4xx JSON error (or a gRPC status)
 * within a time limit, none leaking a file outside the served folders, and the service still
 * answering afterwards. Inputs come from a seeded PRNG: FUZZ_SEED=<n> replays a run.
 */
import assert from "node:assert/strict";
import { once } from "node:events";
import { connect as http2Connect } from "node:http2";
import { connect } from "node:net";
import { after, before, describe, test } from "node:test";
import { Code, loadConfig } from "../../src/framework/index.js";
import { createHttpServer, HTTP_LIMITS } from "../../src/framework/server/http-server.js";
import { startTestServer, type TestServer } from "../../src/framework/testing/harness.js";
import { FixtureService } from "../gen/fixture/v1/fixture_pb.js";
import { fixtureService } from "./fixtures/fixture-service.js";
import { random } from "./support/random.js";

const SEED = Number(process.env.FUZZ_SEED ?? 0x5eed);
const REQUEST_TIMEOUT_MS = 5000;
/** Short, so the idle calls end well within REQUEST_TIMEOUT_MS. */
const FIRST_MESSAGE_TIMEOUT_S = 0.5;
/** Small, so oversized inputs are cheap to send. */
const MAX_MESSAGE = 64 * 1024;

/** The seeded generator with the byte and text shapes the fuzzing sends. */
function prng(seed: number) {
  const { int, pick } = random(seed);
  return {
    int,
    pick,
    bytes: (n: number) => Buffer.from(Array.from({ length: n }, () => int(256))),
    /** Letters and digits (header names). */
    alnum: (n: number) => Array.from({ length: n }, () => "abcdefghijklmnopqrstuvwxyz0123456789"[int(36)]).join(""),
    /** Printable ASCII without space, CR, LF. */
    token: (n: number) => String.fromCharCode(...Array.from({ length: n }, () => 0x21 + int(94))),
  };
}
const rnd = prng(SEED);

interface RawResponse {
  status: number;
  headers: Record<string, string>;
  body: Buffer;
}

/** Sends raw bytes on a new connection; resolves with the response, or undefined if the server just closed. */
function raw(
  bytes: Buffer | string,
  { port, endAfterWrite = false }: { port: number; endAfterWrite?: boolean },
): Promise<RawResponse | undefined> {
  return new Promise((resolve, reject) => {
    const socket = connect(port, "127.0.0.1");
    const chunks: Buffer[] = [];
    const timer = setTimeout(() => {
      socket.destroy();
      reject(new Error(`no answer within ${REQUEST_TIMEOUT_MS} ms to ${JSON.stringify(String(bytes).slice(0, 200))}`));
    }, REQUEST_TIMEOUT_MS);
    const finish = () => {
      clearTimeout(timer);
      resolve(parseResponse(Buffer.concat(chunks)));
    };
    socket.on("data", (c) => {
      chunks.push(c);
      const parsed = parseResponse(Buffer.concat(chunks));
      // Complete once Content-Length bytes have arrived (the server may keep the connection open).
      if (parsed && parsed.headers["content-length"] !== undefined && parsed.body.length >= Number(parsed.headers["content-length"])) {
        socket.destroy();
        finish();
      }
    });
    socket.on("error", () => {}); // a reset after the response is fine; "close" follows
    socket.on("close", finish);
    socket.write(bytes, () => {
      if (endAfterWrite) socket.end();
    });
  });
}

function parseResponse(buf: Buffer): RawResponse | undefined {
  const end = buf.indexOf("\r\n\r\n");
  if (end < 0) return undefined;
  const [statusLine, ...lines] = buf.subarray(0, end).toString("latin1").split("\r\n");
  const m = /^HTTP\/1\.1 (\d{3}) /.exec(statusLine!);
  if (!m) return undefined;
  const headers: Record<string, string> = {};
  for (const l of lines) {
    const i = l.indexOf(":");
    headers[l.slice(0, i).trim().toLowerCase()] = l.slice(i + 1).trim();
  }
  let body = buf.subarray(end + 4);
  if (headers["transfer-encoding"] === "chunked") body = dechunk(body);
  return { status: Number(m[1]), headers, body };
}

function dechunk(buf: Buffer): Buffer {
  const out: Buffer[] = [];
  let i = 0;
  for (;;) {
    const eol = buf.indexOf("\r\n", i);
    if (eol < 0) break;
    const size = Number.parseInt(buf.subarray(i, eol).toString(), 16);
    if (!(size > 0)) break;
    out.push(buf.subarray(eol + 2, eol + 2 + size));
    i = eol + 2 + size + 2;
  }
  return Buffer.concat(out);
}

/** Strings that must never appear in a response: package.json, TypeScript sources, system files. */
const LEAK_MARKERS = [
  '"devDependencies"',
  '"@grpc/grpc-js"',
  "import { ",
  "export function ",
  "root:x:0:0",
  "compilerOptions",
  "-----BEGIN",
];

function assertNoLeak(what: string, body: Buffer): void {
  const text = body.toString("latin1");
  for (const marker of LEAK_MARKERS) assert.ok(!text.includes(marker), `${what}: the response contains ${marker}`);
}

/** A 4xx whose body is the gateway's JSON error. */
function assertJsonError(what: string, r: RawResponse | undefined, statuses?: number[]): void {
  assert.ok(r, `${what}: the connection closed without a response`);
  assertNoLeak(what, r.body);
  assert.ok(r.status >= 400 && r.status < 500, `${what}: status ${r.status}, body ${r.body.toString().slice(0, 200)}`);
  if (statuses) assert.ok(statuses.includes(r.status), `${what}: status ${r.status}, expected one of ${statuses}`);
  assert.match(r.headers["content-type"] ?? "", /^application\/json/, `${what}: content type`);
  const body = JSON.parse(r.body.toString("utf8")) as { code: unknown; message: unknown; details: unknown };
  assert.ok(Number.isInteger(body.code) && (body.code as number) > 0, `${what}: code ${body.code}`);
  assert.equal(typeof body.message, "string", `${what}: message`);
  assert.ok(Array.isArray(body.details), `${what}: details`);
}

const request = (method: string, target: string, headers: Record<string, string | number> = {}, body: Buffer | string = "") => {
  const b = typeof body === "string" ? Buffer.from(body) : body;
  const lines = [`${method} ${target} HTTP/1.1`, "Host: 127.0.0.1", "Connection: close"];
  const all: Record<string, string | number> = b.length > 0 || method === "POST" ? { "Content-Length": b.length, ...headers } : headers;
  for (const [k, v] of Object.entries(all)) lines.push(`${k}: ${v}`);
  return Buffer.concat([Buffer.from(`${lines.join("\r\n")}\r\n\r\n`, "latin1"), b]);
};
const postJson = (path: string, body: Buffer | string, headers: Record<string, string | number> = {}) =>
  request("POST", path, { "Content-Type": "application/json", ...headers }, body);

let server: TestServer;
let port: number;

before(async () => {
  server = await startTestServer([fixtureService], {
    GRPC_MAX_RECV_MSG_SIZE: String(MAX_MESSAGE),
    GRPC_FIRST_MESSAGE_TIMEOUT_SECONDS: String(FIRST_MESSAGE_TIMEOUT_S),
  });
  port = Number(new URL(server.httpUrl).port);
});
after(() => server.close());

/** The service still answers /healthcheck, and Echo over HTTP and gRPC. */
async function stillServing(): Promise<void> {
  const health = await fetch(`${server.httpUrl}/healthcheck`);
  assert.equal(health.status, 200);
  await health.arrayBuffer();
  const echo = await fetch(`${server.httpUrl}/api/v1/echo`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: '{"message":"still here"}',
  });
  assert.equal(echo.status, 200);
  assert.equal(((await echo.json()) as { message: string }).message, "still here");
  const reply = await server.client(FixtureService).echo({ message: "grpc still here" });
  assert.equal(reply.message, "grpc still here");
}

describe(`malformed HTTP requests (FUZZ_SEED=${SEED})`, () => {
  test("bad percent-escapes in paths and query strings", async () => {
    const escapes = ["%", "%%", "%zz", "%4", "%E0%A4%A", "%C0%AF", "%FF", "%FE%FF", "%ED%A0%80", "%F8%88%80%80%80", "%00"];
    for (let i = 0; i < 60; i++) {
      const bad = Array.from({ length: 1 + rnd.int(3) }, () => rnd.pick(escapes)).join(rnd.pick(["", "a", "/"]));
      const target = rnd.pick([
        `/api/v1/echo/${bad}`,
        `/api/v1/echo/x?message=${bad}`,
        `/api/v1/countdown/${bad}`,
        `/${bad}`,
        `/swagger/${bad}`,
      ]);
      const r = await raw(request("GET", target), { port });
      // "%00" and lone escapes may be valid UTF-8 for a string field: then the message is validated, never a 5xx.
      if (r && r.status === 200 && target.startsWith("/api/v1/echo/")) {
        assertNoLeak(`GET ${target}`, r.body);
        continue;
      }
      assertJsonError(`GET ${target}`, r);
    }
  });

  test("overlong paths and headers", async () => {
    assertJsonError("a 20 KiB path", await raw(request("GET", `/api/v1/echo/${"a".repeat(20_000)}`), { port }), [431]);
    assertJsonError("a 64 KiB header", await raw(request("GET", "/healthcheck", { "X-Big": "b".repeat(65_536) }), { port }), [431]);
    const many: Record<string, string> = {};
    for (let i = 0; i < 1000; i++) many[`X-H${i}`] = "v".repeat(20);
    assertJsonError("1,000 headers", await raw(request("GET", "/healthcheck", many), { port }), [431]);
    // Within the limit but no route: a plain 404.
    assertJsonError("an unknown 8 KiB path", await raw(request("GET", `/${"p/".repeat(4000)}`), { port }), [404]);
    // A string field longer than its validation allows.
    assertJsonError("a 2 KiB message in the path", await raw(request("GET", `/api/v1/echo/${"m".repeat(2048)}`), { port }), [400]);
    for (let i = 0; i < 20; i++) {
      const size = 17_000 + rnd.int(50_000);
      const r = await raw(request("GET", rnd.pick(["/healthcheck", "/api/v1/echo/x"]), { [`X-${rnd.alnum(8)}`]: rnd.token(size) }), {
        port,
      });
      assertJsonError(`a ${size}-byte header`, r, [431]);
    }
  });

  test("path traversal against /swagger/ serves nothing outside swagger-ui-dist and the OpenAPI document", async () => {
    const ups = ["..", "%2e%2e", "%2E%2E", ".%2e", "%2e.", "..%2f..", "..%5c..", "....", "%252e%252e", "..;", ".%00."];
    const seps = ["/", "%2f", "%2F", "\\", "%5c", "//", "/./"];
    const files = [
      "package.json",
      "src/main.ts",
      "tsconfig.json",
      "etc/passwd",
      "node_modules/swagger-ui-dist/package.json",
      "index.html%00.css",
    ];
    const targets = new Set<string>([
      "/swagger/../package.json",
      "/swagger/../../package.json",
      "/swagger//etc/passwd",
      "/swagger/swagger-ui.css/../../package.json",
      "/swagger/./package.json",
      "/swagger/package.json",
      "/swagger/index.html/..%2f..%2fpackage.json",
      "/swagger/%2e%2e/%2e%2e/src/main.ts",
      "/swagger/..\\..\\package.json",
    ]);
    while (targets.size < 120) {
      const depth = 1 + rnd.int(5);
      const sep = rnd.pick(seps);
      targets.add(`/swagger/${Array.from({ length: depth }, () => rnd.pick(ups)).join(sep)}${sep}${rnd.pick(files)}`);
    }
    for (const target of targets) {
      const r = await raw(request("GET", target), { port });
      assertJsonError(`GET ${target}`, r, [400, 404]);
    }
  });

  test("invalid UTF-8 in bodies and paths", async () => {
    const invalid = [
      Buffer.from([0xff]),
      Buffer.from([0xc0, 0xaf]),
      Buffer.from([0xed, 0xa0, 0x80]),
      Buffer.from([0xe0, 0x80]),
      Buffer.from([0xf5, 0x80, 0x80, 0x80]),
    ];
    for (let i = 0; i < 40; i++) {
      const bad = Buffer.concat([Buffer.from("x"), rnd.pick(invalid), rnd.bytes(rnd.int(4))]);
      const body = Buffer.concat([Buffer.from('{"message":"'), bad, Buffer.from('"}')]);
      const path = rnd.pick(["/api/v1/echo", "/api/v1/countdown", "/api/v1/fail"]);
      assertJsonError(`POST ${path} with invalid UTF-8`, await raw(postJson(path, body), { port }), [400]);
    }
    for (let i = 0; i < 20; i++) {
      // Raw bytes ≥ 0x80 in the request target.
      const target = Buffer.concat([Buffer.from("/api/v1/echo/a"), rnd.pick(invalid)]);
      const bytes = Buffer.concat([Buffer.from("GET "), target, Buffer.from(" HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n")]);
      assertJsonError("a raw invalid UTF-8 path", await raw(bytes, { port }), [400]);
    }
  });

  test("wrong JSON types, huge numbers and broken JSON", async () => {
    const bodies = [
      '{"message":123}',
      '{"message":["a"]}',
      '{"message":{"a":1}}',
      '{"message":true}',
      '{"message":"x","delayMs":"abc"}',
      '{"message":"x","delayMs":-1}',
      '{"message":"x","delayMs":1.5}',
      '{"message":"x","delayMs":1e400}',
      '{"message":"x","delayMs":99999999999999999999999}',
      '{"message":"x","delayMs":4294967296}',
      '{"message":"x","delayMs":40000}',
      '{"message":"x","debug":"yes"}',
      '{"message":"x","unknown":1,',
      '{"message":""}',
      "[1,2]",
      '"str"',
      "null",
      "1e999999",
      "",
      "{",
      '{"message":"\\ud800"}',
      '{"message":"\\u00"}',
      `${"[".repeat(30_000)}${"]".repeat(30_000)}`,
    ];
    for (const body of bodies)
      assertJsonError(`POST /api/v1/echo ${body.slice(0, 40)}`, await raw(postJson("/api/v1/echo", body), { port }), [400]);
    // An unknown field 100 levels deep is ignored like any other; 10,000 levels are refused as too deep, before parsing.
    const nested = (depth: number) => `{"message":"x","a":${'{"a":'.repeat(depth - 1)}1${"}".repeat(depth - 1)}}`;
    assert.equal((await raw(postJson("/api/v1/echo", nested(100)), { port }))?.status, 200);
    assertJsonError("POST /api/v1/echo 10,000 levels deep", await raw(postJson("/api/v1/echo", nested(10_000)), { port }), [400]);
    const countdown = ['{"from":0}', '{"from":1001}', '{"from":-5}', '{"from":"ten"}', '{"from":1e20}', '{"from":3,"intervalMs":10001}'];
    for (const body of countdown)
      assertJsonError(`POST /api/v1/countdown ${body}`, await raw(postJson("/api/v1/countdown", body), { port }), [400]);
    const fail = ['{"code":17}', '{"code":-1}', '{"code":2147483648}', '{"code":"NOT_A_CODE"}'];
    for (const body of fail) assertJsonError(`POST /api/v1/fail ${body}`, await raw(postJson("/api/v1/fail", body), { port }), [400]);
    for (const target of [
      "/api/v1/countdown/99999999999999999999",
      "/api/v1/countdown/1e30",
      "/api/v1/countdown/1.5",
      "/api/v1/countdown/-1",
      "/api/v1/countdown/ten",
    ]) {
      assertJsonError(`GET ${target}`, await raw(request("GET", target), { port }), [400]);
    }
  });

  test("random bytes as bodies, wrong content types, oversized and truncated bodies", async () => {
    for (let i = 0; i < 60; i++) {
      const body = rnd.bytes(1 + rnd.int(2000));
      const path = rnd.pick(["/api/v1/echo", "/api/v1/countdown", "/api/v1/fail"]);
      assertJsonError(`random ${body.length} bytes to ${path}`, await raw(postJson(path, body), { port }), [400]);
    }
    const types = [
      "text/xml",
      "application/x-www-form-urlencoded",
      "multipart/form-data; boundary=x",
      "application/octet-stream",
      "image/png",
      "application/grpc",
      "application/jsonx",
      ";;;",
    ];
    for (const type of types) {
      const r = await raw(request("POST", "/api/v1/echo", { "Content-Type": type }, '{"message":"x"}'), { port });
      assertJsonError(`content type ${type}`, r, [400, 415]);
    }
    assertJsonError("no content type", await raw(request("POST", "/api/v1/echo", {}, '{"message":"x"}'), { port }), [400, 415]);
    assertJsonError(
      "a body over the limit",
      await raw(postJson("/api/v1/echo", `{"message":"${"x".repeat(MAX_MESSAGE)}"}`), { port }),
      [413],
    );
    assertJsonError(
      "a declared length over the limit",
      await raw(postJson("/api/v1/echo", "", { "Content-Length": MAX_MESSAGE * 4 }), { port }),
      [413],
    );
    for (let i = 0; i < 10; i++) {
      // The client stops mid-body and closes its side: still a JSON 400 (Node's parser reports the early end).
      const full = `{"message":"${rnd.token(200)}"}`;
      const cut = Buffer.from(
        `POST /api/v1/echo HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: ${full.length}\r\n\r\n${full.slice(0, rnd.int(full.length - 1))}`,
      );
      assertJsonError("a truncated body", await raw(cut, { port, endAfterWrite: true }), [400]);
    }
    const badLengths = ["-1", "abc", "1, 2", "99999999999999999999999"];
    for (const length of badLengths) {
      const bytes = Buffer.from(
        `POST /api/v1/echo HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: ${length}\r\nConnection: close\r\n\r\n{}`,
      );
      assertJsonError(`Content-Length: ${length}`, await raw(bytes, { port }), [400, 413]);
    }
  });

  test("JSON nested around the depth limit, brackets in strings and escapes: 101 levels or more is 400 code 3, never parsed", async () => {
    const open = () => rnd.pick(["[", '{"k":']);
    for (let i = 0; i < 40; i++) {
      const depth = 95 + rnd.int(12); // the whole body's depth, the top object included
      const opens = Array.from({ length: depth - 1 }, open);
      const closes = opens.map((o) => (o === "[" ? "]" : "}")).reverse();
      // Strings full of brackets and escaped quotes count for nothing.
      const noise = `"${Array.from({ length: rnd.int(20) }, () => rnd.pick(["[", "{", '\\"', "\\\\", "]", "x"])).join("")}"`;
      const body = `{"message":${noise},"x":${opens.join("")}1${closes.join("")}}`;
      const path = rnd.pick(["/api/v1/echo", "/api/v1/countdown"]);
      const r = await raw(postJson(path, body), { port });
      if (depth > 100) {
        assertJsonError(`${depth} levels to ${path}`, r, [400]);
        assert.match(JSON.parse(r!.body.toString()).message, /nested deeper than 100 levels/, `${depth} levels`);
      } else assert.ok(r && r.status !== 500 && !/nested deeper/.test(r.body.toString()), `${depth} levels to ${path}: ${r?.status}`);
    }
    // A streamed message too: NDJSON to a client-streaming route.
    const deep = `{"value":1,"x":${"[".repeat(150)}${"]".repeat(150)}}\n`;
    const r = await raw(request("POST", "/api/v1/sum", { "Content-Type": "application/x-ndjson" }, deep), { port });
    assertJsonError("a streamed message 151 levels deep", r, [400]);
  });

  test("random content types on client-streaming and bidi routes: only JSON and NDJSON reach the handler", async () => {
    const allowed = /^\s*application\/(?:json|x-ndjson)\s*(?:;|$)/i;
    const types = [
      "text/plain",
      "application/x-www-form-urlencoded",
      "multipart/form-data; boundary=b",
      "",
      "application/jsonx",
      "APPLICATION/X-NDJSON",
    ];
    for (let i = 0; i < 40; i++) {
      const type =
        i < types.length
          ? types[i]!
          : rnd.pick([
              `${rnd.alnum(1 + rnd.int(8))}/${rnd.alnum(1 + rnd.int(8))}`,
              `application/json; ${rnd.alnum(4)}=${rnd.alnum(4)}`,
              rnd.token(1 + rnd.int(20)),
            ]);
      const path = rnd.pick(["/api/v1/sum", "/api/v1/chat"]);
      const headers: Record<string, string> = type === "" ? {} : { "Content-Type": type };
      const r = await raw(request("POST", path, headers, path.endsWith("sum") ? '{"value":1}\n' : '{"text":"x"}\n'), { port });
      assert.ok(r, `${path} ${JSON.stringify(type)}: no response`);
      if (allowed.test(type)) assert.equal(r.status, 200, `${path} ${JSON.stringify(type)}: ${r.body.toString().slice(0, 200)}`);
      else assertJsonError(`${path} ${JSON.stringify(type)}`, r, [400, 415]);
    }
  });

  test("Upgrade headers: h2c, unknown tokens and WebSocket to paths without a stream are served as plain requests, probes included", async () => {
    const upgrades = ["h2c", "websocket", "foo/1", "TLS/1.0", "h2", rnd.token(8)];
    for (let i = 0; i < 30; i++) {
      const upgrade = i < upgrades.length ? upgrades[i]! : rnd.pick([...upgrades, rnd.alnum(1 + rnd.int(10))]);
      const [method, target, status] = rnd.pick([
        ["GET", "/healthcheck", 200],
        ["GET", "/readycheck", 200],
        ["GET", "/api/v1/echo/hi", 200],
        ["GET", "/nowhere", 404],
      ] as const);
      const headers: Record<string, string> = {
        Connection: "Upgrade, HTTP2-Settings",
        Upgrade: upgrade,
        "HTTP2-Settings": "AAMAAABkAAQAoAAAAAIAAAAA",
      };
      if (upgrade === "websocket")
        Object.assign(headers, { "Sec-WebSocket-Version": "13", "Sec-WebSocket-Key": "dGhlIHNhbXBsZSBub25jZQ==" });
      const r = await raw(request(method, target, headers), { port });
      assert.equal(r?.status, status, `${method} ${target} with Upgrade: ${upgrade}`);
    }
  });

  test("bad Grpc-Timeout headers", async () => {
    const values = ["abc", "1x", "-1S", "999999999H", "", "1.5S", "S", "10", "1 S", "0x10S", "１S"];
    for (const value of values) {
      const r = await raw(postJson("/api/v1/echo", '{"message":"x"}', { "Grpc-Timeout": value }), { port });
      assertJsonError(`Grpc-Timeout: ${JSON.stringify(value)}`, r, [400]);
    }
  });

  test("malformed request lines, headers and framing", async () => {
    const fixed = [
      "GARBAGE\r\n\r\n",
      "GET\r\n\r\n",
      "GET / HTTP/9.9\r\nHost: x\r\n\r\n",
      "GET /healthcheck HTTP/1.1\r\n\r\n", // no Host
      "GET /healthcheck HTTP/1.1\r\nHost: x\r\nBad Header: y\r\n\r\n",
      "GET /healthcheck HTTP/1.1\r\nHost: x\r\nX-Nul: a\u0000b\r\n\r\n",
      "GET /healthcheck HTTP/1.1\r\nHost: x\r\n Folded: y\r\n\r\n",
      "POST /api/v1/echo HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n",
      "POST /api/v1/echo HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n{}\r\n0\r\n\r\n",
      "POST /api/v1/echo HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\nContent-Length: 3\r\n\r\n{}",
      "GET /healthcheck HTTP/1.1\nHost: x\n\n\u0001\u0002",
      "\u0016\u0003\u0001\u0000\u00a5\u0001\u0000\u0000\u00a1\u0003\u0003", // a TLS ClientHello
      "PRI * HTTP/2.0\r\n\r\nXX\r\n\r\n", // an HTTP/2 preface gone wrong: HTTP/1.1 refuses it
    ];
    for (const bytes of fixed)
      assertJsonError(`raw ${JSON.stringify(bytes.slice(0, 40))}`, await raw(Buffer.from(bytes, "latin1"), { port }), [400]);
    // The HTTP/2 preface opens an HTTP/2 connection (the port speaks both): the server's SETTINGS frame answers it.
    const socket = connect(port, "127.0.0.1");
    socket.write("PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n");
    const [frame] = (await once(socket, "data")) as [Buffer];
    socket.destroy();
    assert.equal(frame[3], 0x4, "a SETTINGS frame");
    for (let i = 0; i < 60; i++) {
      const bytes = Buffer.concat([rnd.bytes(1 + rnd.int(300)), Buffer.from("\r\n\r\n")]);
      assertJsonError(`random request ${i}`, await raw(bytes, { port }), [400, 404, 405, 431]);
    }
  });

  test("the service still answers", stillServing);
});

describe("limits", () => {
  test("the HTTP server carries the documented limits", async () => {
    const app = await createHttpServer(loadConfig({ GRPC_MAX_RECV_MSG_SIZE: "1000" }));
    try {
      const s = app.server;
      assert.equal(s.requestTimeout, 30_000);
      assert.equal(s.headersTimeout, 10_000);
      assert.equal(s.keepAliveTimeout, 72_000);
      assert.equal(s.timeout, HTTP_LIMITS.connectionTimeoutMs);
      assert.equal((s as unknown as { maxHeaderSize: number }).maxHeaderSize, HTTP_LIMITS.maxHeaderSize);
      assert.equal(app.initialConfig.bodyLimit, 1000, "the body limit is GRPC_MAX_RECV_MSG_SIZE");
    } finally {
      await app.close();
    }
  });

  test("the gRPC server announces GRPC_MAX_CONCURRENT_STREAMS", async () => {
    const session = http2Connect(`http://${server.grpcAddress}`);
    try {
      await new Promise((resolve) => session.once("remoteSettings", resolve));
      assert.equal(session.remoteSettings.maxConcurrentStreams, loadConfig({}).GRPC_MAX_CONCURRENT_STREAMS);
    } finally {
      session.close();
    }
  });
});

interface GrpcResult {
  httpStatus: number;
  grpcStatus: number | undefined;
  message: string | undefined;
}

/** One call over raw HTTP/2: the given headers and DATA bytes, then END_STREAM. */
function grpcRaw(path: string, data: Buffer, headers: Record<string, string> = {}): Promise<GrpcResult> {
  return new Promise((resolve, reject) => {
    const session = http2Connect(`http://${server.grpcAddress}`);
    session.on("error", () => {});
    const timer = setTimeout(() => {
      session.destroy();
      reject(new Error(`no gRPC status within ${REQUEST_TIMEOUT_MS} ms for ${path} with ${data.length} bytes`));
    }, REQUEST_TIMEOUT_MS);
    const stream = session.request({
      ":method": "POST",
      ":path": path,
      "content-type": "application/grpc",
      te: "trailers",
      // Every call ends in time even when random bytes decode to a valid slow request.
      "grpc-timeout": "2S",
      ...headers,
    });
    let result: GrpcResult = { httpStatus: 0, grpcStatus: undefined, message: undefined };
    const take = (h: Record<string, unknown>) => {
      if (h["grpc-status"] !== undefined)
        result = { ...result, grpcStatus: Number(h["grpc-status"]), message: String(h["grpc-message"] ?? "") };
    };
    stream.on("response", (h) => {
      result.httpStatus = Number(h[":status"]);
      take(h);
    });
    stream.on("trailers", take);
    stream.on("data", () => {});
    stream.on("error", () => {});
    stream.on("close", () => {
      clearTimeout(timer);
      session.close();
      resolve(result);
    });
    stream.end(data);
  });
}

/** A call over raw HTTP/2 that sends its headers (and `bytes`, if any) and then nothing, never half-closing. */
function grpcIdle(path: string, headers: Record<string, string>, bytes?: Buffer): Promise<GrpcResult> {
  return new Promise((resolve, reject) => {
    const session = http2Connect(`http://${server.grpcAddress}`);
    session.on("error", () => {});
    const timer = setTimeout(() => {
      session.destroy();
      reject(new Error(`idle call on ${path} not ended within ${REQUEST_TIMEOUT_MS} ms`));
    }, REQUEST_TIMEOUT_MS);
    const stream = session.request({ ":method": "POST", ":path": path, "content-type": "application/grpc", te: "trailers", ...headers });
    let result: GrpcResult = { httpStatus: 0, grpcStatus: undefined, message: undefined };
    const done = () => {
      clearTimeout(timer);
      session.destroy();
      resolve(result);
    };
    // The status ends the call for the client (a server need not reset a stream it has answered).
    const take = (h: Record<string, unknown>) => {
      if (h["grpc-status"] === undefined) return;
      result = { ...result, grpcStatus: Number(h["grpc-status"]), message: String(h["grpc-message"] ?? "") };
      done();
    };
    stream.on("response", (h) => {
      result.httpStatus = Number(h[":status"]);
      take(h);
    });
    stream.on("trailers", take);
    stream.on("data", () => {});
    stream.on("error", () => {});
    stream.on("close", done);
    if (bytes) stream.write(bytes);
  });
}

/** A gRPC length-prefixed message: flag byte, 4-byte big-endian length, payload. */
function frame(payload: Buffer, { compressed = false, length = payload.length } = {}): Buffer {
  const head = Buffer.alloc(5);
  head[0] = compressed ? 1 : 0;
  head.writeUInt32BE(length >>> 0, 1);
  return Buffer.concat([head, payload]);
}

const ECHO = "/fixture.v1.FixtureService/Echo";
const METHODS = [ECHO, "/fixture.v1.FixtureService/Countdown", "/fixture.v1.FixtureService/Fail"];

describe(`malformed gRPC frames (FUZZ_SEED=${SEED})`, () => {
  test("bad length prefixes: shorter or longer than the data, cut inside the prefix", async () => {
    const valid = Buffer.from([0x0a, 0x02, 0x68, 0x69]); // EchoRequest{message:"hi"}
    const cases: [string, Buffer][] = [
      ["a length above the data", frame(valid, { length: 100 })],
      ["a length below the data", frame(valid, { length: 2 })],
      ["a prefix cut short", Buffer.from([0, 0, 0])],
      ["a prefix only", Buffer.from([0, 0, 0, 0, 50])],
      ["two messages for a unary method", Buffer.concat([frame(valid), frame(valid)])],
      ["no message at all", Buffer.alloc(0)],
    ];
    for (let i = 0; i < 30; i++) cases.push([`random prefix ${i}`, Buffer.concat([rnd.bytes(5), rnd.bytes(rnd.int(40))])]);
    for (const [what, data] of cases) {
      const r = await grpcRaw(ECHO, data);
      assert.ok(r.grpcStatus !== undefined, `${what}: no grpc-status (HTTP ${r.httpStatus})`);
      if (what.startsWith("random")) continue;
      assert.notEqual(r.grpcStatus, Code.OK, `${what}: OK`);
    }
  });

  test("a compressed flag: without an encoding (grpc-js reads it as plain), with garbage gzip (INTERNAL), unknown (UNIMPLEMENTED)", async () => {
    const valid = Buffer.from([0x0a, 0x02, 0x68, 0x69]);
    // The spec calls this a protocol error; grpc-js 1.14 leniently reads the bytes as uncompressed. Either way: a status.
    const none = await grpcRaw(ECHO, frame(valid, { compressed: true }));
    assert.ok(none.grpcStatus === Code.OK || none.grpcStatus === Code.INTERNAL, `no encoding: ${none.grpcStatus} ${none.message}`);
    const noneGarbage = await grpcRaw(ECHO, frame(rnd.bytes(50), { compressed: true }));
    assert.ok(noneGarbage.grpcStatus !== undefined, "no encoding, garbage: a status");
    for (let i = 0; i < 10; i++) {
      const r = await grpcRaw(ECHO, frame(rnd.bytes(1 + rnd.int(100)), { compressed: true }), { "grpc-encoding": "gzip" });
      assert.equal(r.grpcStatus, Code.INTERNAL, `garbage gzip: ${r.message}`);
    }
    const unknown = await grpcRaw(ECHO, frame(valid, { compressed: true }), { "grpc-encoding": "snappy" });
    assert.equal(unknown.grpcStatus, Code.UNIMPLEMENTED, `unknown encoding: ${unknown.message}`);
  });

  test("garbage protobuf is refused with a status, never a crash", async () => {
    const fixed = [
      Buffer.from([0x0a, 0xff, 0xff, 0xff, 0xff, 0x0f]), // a length of 4 GiB for a string
      Buffer.from([0x0a, 0x05, 0x68]), // a string cut short
      Buffer.from([0x0a, 0x02, 0xff, 0xfe]), // a string of invalid UTF-8
      Buffer.from([0x20, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01]), // a varint of 11 bytes
      Buffer.from([0x0b]), // a group start (wire type 3)
      Buffer.from([0x0f]), // wire type 7
      Buffer.from([0x00]), // field number 0
    ];
    for (const payload of fixed) {
      const r = await grpcRaw(ECHO, frame(payload));
      assert.ok(r.grpcStatus !== undefined && r.grpcStatus !== Code.OK, `${payload.toString("hex")}: ${r.grpcStatus} ${r.message}`);
      assert.ok([Code.INVALID_ARGUMENT, Code.INTERNAL].includes(r.grpcStatus), `${payload.toString("hex")}: ${r.grpcStatus} ${r.message}`);
    }
    for (let i = 0; i < 100; i++) {
      const r = await grpcRaw(rnd.pick(METHODS), frame(rnd.bytes(rnd.int(200))));
      assert.ok(r.grpcStatus !== undefined, `random payload ${i}: no grpc-status`);
      assert.ok(r.grpcStatus >= 0 && r.grpcStatus <= 16, `random payload ${i}: ${r.grpcStatus}`);
    }
  });

  test("oversized messages are RESOURCE_EXHAUSTED, declared or real", async () => {
    const declared = await grpcRaw(ECHO, frame(Buffer.alloc(10), { length: 0x7fffffff }));
    assert.equal(declared.grpcStatus, Code.RESOURCE_EXHAUSTED, declared.message);
    const real = await grpcRaw(ECHO, frame(Buffer.alloc(MAX_MESSAGE + 1)));
    assert.equal(real.grpcStatus, Code.RESOURCE_EXHAUSTED, real.message);
  });

  test("idle calls: headers and never a message (or a message cut inside its prefix, with a deadline) end with DEADLINE_EXCEEDED", async () => {
    const paths = [
      "/grpc.health.v1.Health/Check",
      "/grpc.health.v1.Health/Watch",
      ECHO,
      `/${FixtureService.typeName}/Countdown`,
      `/${FixtureService.typeName}/Sum`,
      `/${FixtureService.typeName}/Chat`,
    ];
    const calls = Array.from({ length: 40 }, () => {
      const path = rnd.pick(paths);
      const headers: Record<string, string> = {};
      for (let i = rnd.int(3); i > 0; i--) headers[`x-${rnd.alnum(1 + rnd.int(8))}`] = rnd.token(1 + rnd.int(20));
      // Without a deadline, only GRPC_FIRST_MESSAGE_TIMEOUT_SECONDS ends the call; a call whose request has begun
      // is the deadline's to end.
      const cut = rnd.int(3) === 0 ? rnd.bytes(1 + rnd.int(4)) : undefined;
      if (cut) headers["grpc-timeout"] = `${1 + rnd.int(3)}S`;
      return grpcIdle(path, headers, cut).then((r) => ({ path, cut: cut?.length, ...r }));
    });
    for (const r of await Promise.all(calls)) assert.equal(r.grpcStatus, Code.DEADLINE_EXCEEDED, JSON.stringify(r));
  });

  test("unknown methods, wrong content types and bad grpc-timeout", async () => {
    const valid = frame(Buffer.from([0x0a, 0x02, 0x68, 0x69]));
    assert.equal((await grpcRaw("/fixture.v1.FixtureService/Nope", valid)).grpcStatus, Code.UNIMPLEMENTED);
    assert.equal((await grpcRaw("/nope.Nope/Echo", valid)).grpcStatus, Code.UNIMPLEMENTED);
    assert.equal((await grpcRaw(`/${"x".repeat(5000)}`, valid)).grpcStatus, Code.UNIMPLEMENTED);
    const json = await grpcRaw(ECHO, Buffer.from('{"message":"hi"}'), { "content-type": "application/json" });
    assert.ok(json.httpStatus === 415 || json.grpcStatus !== undefined, `content-type json: HTTP ${json.httpStatus}`);
    for (const timeout of ["abc", "-1S", "999999999999H", "1x"]) {
      const r = await grpcRaw(ECHO, valid, { "grpc-timeout": timeout });
      assert.ok(r.grpcStatus !== undefined, `grpc-timeout ${timeout}: no status`);
    }
  });

  test("the service still answers", stillServing);
});
