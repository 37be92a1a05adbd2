/**
 * Streaming calls over WebSocket on the HTTP port, driven by Node 24's built-in WebSocket client:
 * the framing (JSON text frames, {"result"}, the final {"end"} or {"error"} frame, a normal close),
 * both paths (gRPC path and google.api.http path), credentials in Sec-WebSocket-Protocol, the Origin
 * check against the CORS settings, bad frames, and the client leaving mid-stream.
 */
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { SignJWT } from "jose";
import { WS_PROTOCOL } from "../../src/framework/browser/websocket.js";
import { defineService } from "../../src/framework/index.js";
import { startTestServer, type TestServer } from "../../src/framework/testing/harness.js";
import { FixtureService } from "../gen/fixture/v1/fixture_pb.js";
import { fixtureService } from "./fixtures/fixture-service.js";
import { handled } from "./support/metrics.js";
import { waitFor } from "./support/wait.js";

interface Outcome {
  frames: unknown[];
  code: number;
}

/** Opens a socket, sends `send` once it is open, and collects every frame until the close. */
function call(url: string, send: string[], init: { protocols?: string[]; headers?: Record<string, string> } = {}): Promise<Outcome> {
  return new Promise((resolve, reject) => {
    const ws = new WebSocket(url, { protocols: init.protocols ?? [WS_PROTOCOL], headers: init.headers } as never);
    const frames: unknown[] = [];
    ws.onopen = () => {
      for (const frame of send) ws.send(frame);
    };
    ws.onmessage = (e) => frames.push(JSON.parse(String(e.data)));
    ws.onclose = (e) => resolve({ frames, code: e.code });
    ws.onerror = () => reject(new Error("websocket failed"));
  });
}

/** The status of an upgrade the server refuses, read from a plain HTTP request. */
async function refusal(url: string, headers: Record<string, string>): Promise<{ status: number; body: unknown }> {
  const { request } = await import("node:http");
  return new Promise((resolve, reject) => {
    const req = request(url.replace(/^ws/, "http"), {
      headers: {
        connection: "Upgrade",
        upgrade: "websocket",
        "sec-websocket-version": "13",
        "sec-websocket-key": "dGhlIHNhbXBsZSBub25jZQ==",
        ...headers,
      },
    });
    req.on("response", (res) => {
      let text = "";
      res.on("data", (c) => (text += c));
      res.on("end", () => resolve({ status: res.statusCode!, body: text === "" ? undefined : JSON.parse(text) }));
    });
    req.on("upgrade", () => reject(new Error("the upgrade was accepted")));
    req.on("error", reject);
    req.end();
  });
}

describe("WebSocket streams", () => {
  let server: TestServer;
  let ws: string;
  before(async () => {
    server = await startTestServer([fixtureService], { CORS_ALLOWED_ORIGINS: "https://app.example.com" });
    ws = server.httpUrl.replace(/^http/, "ws");
  });
  after(() => server.close());

  test("a server stream at /<package.Service>/<Method>: one result frame per message, an end frame, a normal close", async () => {
    const out = await call(`${ws}/fixture.v1.FixtureService/Countdown`, ['{"from":3}', ""]);
    assert.deepEqual(out.frames, [{ result: { remaining: 3 } }, { result: { remaining: 2 } }, { result: { remaining: 1 } }, { end: {} }]);
    assert.equal(out.code, 1000);
  });

  test("at the method's google.api.http path, the URL's path variables win over the message", async () => {
    const out = await call(`${ws}/api/v1/countdown/2`, ['{"from":50}']);
    assert.deepEqual(out.frames, [{ result: { remaining: 2 } }, { result: { remaining: 1 } }, { end: {} }]);
  });

  test("bidi: each request frame is answered as it arrives; the half-close ends the call OK", async () => {
    const out = await call(`${ws}/fixture.v1.FixtureService/Chat`, ['{"text":"a"}', '{"text":"b"}', '{"text":"c"}', ""]);
    assert.deepEqual(out.frames, [
      { result: { text: "a", seq: 1 } },
      { result: { text: "b", seq: 2 } },
      { result: { text: "c", seq: 3 } },
      { end: {} },
    ]);
    assert.equal(out.code, 1000);
  });

  test("bidi: the answer to each message comes before the next message is sent (a real conversation)", async () => {
    const replies = await new Promise<unknown[]>((resolve) => {
      const socket = new WebSocket(`${ws}/fixture.v1.FixtureService/Chat`, [WS_PROTOCOL]);
      const frames: unknown[] = [];
      socket.onopen = () => socket.send('{"text":"ping 1"}');
      socket.onmessage = (e) => {
        const frame = JSON.parse(String(e.data)) as { result?: { seq: number } };
        frames.push(frame);
        if (frame.result?.seq === 1) socket.send('{"text":"ping 2"}');
        else if (frame.result?.seq === 2) socket.send("");
      };
      socket.onclose = () => resolve(frames);
    });
    assert.deepEqual(replies, [{ result: { text: "ping 1", seq: 1 } }, { result: { text: "ping 2", seq: 2 } }, { end: {} }]);
  });

  test("client streaming: every request frame is read, one result after the half-close", async () => {
    const out = await call(`${ws}/fixture.v1.FixtureService/Sum`, ['{"value":"1"}', '{"value":2}', '{"value":"3"}', ""]);
    assert.deepEqual(out.frames, [{ result: { sum: "6", count: 3 } }, { end: {} }]);
    const none = await call(`${ws}/fixture.v1.FixtureService/Sum`, [""]);
    assert.deepEqual(none.frames, [{ result: { sum: "0", count: 0 } }, { end: {} }]);
  });

  test("bidi: an invalid message in the middle ends the call with INVALID_ARGUMENT after the earlier answers", async () => {
    const out = await call(`${ws}/fixture.v1.FixtureService/Chat`, ['{"text":"ok"}', '{"text":""}', '{"text":"never"}']);
    assert.deepEqual(out.frames[0], { result: { text: "ok", seq: 1 } });
    assert.equal((out.frames.at(-1) as { error?: { code: number } }).error?.code, 3);
    assert.equal(out.frames.length, 2);
  });

  test("an invalid request ends the call with an error frame carrying the details, then a normal close", async () => {
    const out = await call(`${ws}/fixture.v1.FixtureService/Countdown`, ['{"from":0}']);
    assert.equal(out.frames.length, 1);
    const { error } = out.frames[0] as { error: { code: number; details: { "@type": string }[] } };
    assert.equal(error.code, 3);
    assert.equal(error.details[0]?.["@type"], "type.googleapis.com/google.rpc.BadRequest");
    assert.equal(out.code, 1000);
  });

  test("malformed JSON, a binary frame or a second request message is INVALID_ARGUMENT", async () => {
    for (const frames of [["{nope"], ['{"from":2,"intervalMs":1000}', '{"from":2}']]) {
      const out = await call(`${ws}/fixture.v1.FixtureService/Countdown`, frames);
      const last = out.frames.at(-1) as { error?: { code: number } };
      assert.equal(last.error?.code, 3, JSON.stringify(frames));
    }
    const binary = await new Promise<unknown[]>((resolve) => {
      const socket = new WebSocket(`${ws}/fixture.v1.FixtureService/Countdown`, [WS_PROTOCOL]);
      const frames: unknown[] = [];
      socket.onopen = () => socket.send(new Uint8Array([1, 2, 3]));
      socket.onmessage = (e) => frames.push(JSON.parse(String(e.data)));
      socket.onclose = () => resolve(frames);
    });
    assert.deepEqual(binary, [{ error: { code: 3, message: "send request messages as JSON text frames", details: [] } }]);
  });

  test("the client closing mid-stream cancels the handler, and the server keeps serving", async () => {
    await new Promise<void>((resolve) => {
      const socket = new WebSocket(`${ws}/fixture.v1.FixtureService/Countdown`, [WS_PROTOCOL]);
      socket.onopen = () => socket.send('{"from":100,"intervalMs":1000}');
      socket.onmessage = () => socket.close(1000);
      socket.onclose = () => resolve();
    });
    const line = await waitFor(() =>
      server.logs.find((l) => l.msg === "response time" && l.protocol === "websocket" && l.grpcCode === "Canceled"),
    );
    assert.equal(line.grpcMethod, "/fixture.v1.FixtureService/Countdown");
    const out = await call(`${ws}/fixture.v1.FixtureService/Countdown`, ['{"from":1}']);
    assert.deepEqual(out.frames, [{ result: { remaining: 1 } }, { end: {} }]);
  });

  test("an Origin the CORS settings allow may open a stream; any other is refused with 403 before the upgrade", async () => {
    const ok = await call(`${ws}/fixture.v1.FixtureService/Countdown`, ['{"from":1}'], { headers: { origin: "https://app.example.com" } });
    assert.deepEqual(ok.frames.at(-1), { end: {} });
    const refused = await refusal(`${ws}/fixture.v1.FixtureService/Countdown`, { origin: "https://evil.example.com" });
    assert.equal(refused.status, 403);
    assert.deepEqual(refused.body, { code: 7, message: "origin not allowed: add it to CORS_ALLOWED_ORIGINS", details: [] });
  });

  test("unary methods and unknown paths are not WebSocket routes: the upgrade is not taken, the request is served as plain HTTP", async () => {
    for (const [path, status] of [
      ["/fixture.v1.FixtureService/Echo", 415], // a Connect GET without its query
      ["/api/v1/echo", 405],
      ["/nowhere", 404],
      ["/healthcheck", 200],
    ] as const) {
      assert.equal((await refusal(`${ws}${path}`, {})).status, status, path);
    }
  });

  test("an offer without the call subprotocol is refused (400)", async () => {
    const res = await refusal(`${ws}/fixture.v1.FixtureService/Countdown`, { "sec-websocket-protocol": "chat" });
    assert.equal(res.status, 400);
  });

  test("each stream is one call in the metrics", async () => {
    const before = await handled(server, "Countdown", "OK");
    await call(`${ws}/fixture.v1.FixtureService/Countdown`, ['{"from":2}']);
    assert.equal(await handled(server, "Countdown", "OK"), before + 1);
  });
});

describe("WebSocket limits", () => {
  test("a frame over GRPC_MAX_RECV_MSG_SIZE closes the socket with 1009 (message too big); the server keeps serving", async () => {
    const server = await startTestServer([fixtureService], { GRPC_MAX_RECV_MSG_SIZE: "1024" });
    try {
      const ws = server.httpUrl.replace(/^http/, "ws");
      const out = await call(`${ws}/fixture.v1.FixtureService/Chat`, [JSON.stringify({ text: "x".repeat(2000) })]);
      assert.equal(out.code, 1009);
      const ok = await call(`${ws}/fixture.v1.FixtureService/Chat`, ['{"text":"small"}', ""]);
      assert.deepEqual(ok.frames, [{ result: { text: "small", seq: 1 } }, { end: {} }]);
    } finally {
      await server.close();
    }
  });
});

const SECRET = "a-test-secret-of-at-least-32-bytes!!";

describe("WebSocket streams with authentication on", () => {
  let server: TestServer;
  let ws: string;
  before(async () => {
    // Countdown is public by its proto rule; Chat needs credentials.
    const guarded = defineService(FixtureService, { handlers: fixtureService.handlers });
    server = await startTestServer([guarded], { API_KEYS: "k-1", JWT_SECRET: SECRET });
    ws = server.httpUrl.replace(/^http/, "ws");
  });
  after(() => server.close());

  test("without credentials the call ends UNAUTHENTICATED", async () => {
    const out = await call(`${ws}/fixture.v1.FixtureService/Chat`, ['{"text":"a"}', ""]);
    assert.deepEqual(out.frames, [{ error: { code: 16, message: "unauthenticated", details: [] } }]);
  });

  test("the API key travels in a Sec-WebSocket-Protocol entry (base64url), never in the URL, and is never echoed", async () => {
    const key = Buffer.from("k-1").toString("base64url");
    const out = await call(`${ws}/fixture.v1.FixtureService/Chat`, ['{"text":"a"}', ""], { protocols: [WS_PROTOCOL, `api-key.${key}`] });
    assert.deepEqual(out.frames, [{ result: { text: "a", seq: 1 } }, { end: {} }]);
    const selected = await new Promise<string>((resolve) => {
      const socket = new WebSocket(`${ws}/fixture.v1.FixtureService/Chat`, [WS_PROTOCOL, `api-key.${key}`]);
      socket.onopen = () => {
        resolve(socket.protocol);
        socket.close();
      };
    });
    assert.equal(selected, WS_PROTOCOL, "the server selects the call subprotocol, not the credential entry");
  });

  test("a JWT travels as bearer.<base64url token>; one that does not verify is UNAUTHENTICATED", async () => {
    const jwt = await new SignJWT({ sub: "ws-user" })
      .setProtectedHeader({ alg: "HS256" })
      .setExpirationTime("5m")
      .sign(new TextEncoder().encode(SECRET));
    const ok = await call(`${ws}/fixture.v1.FixtureService/Sum`, ['{"value":"2"}', ""], {
      protocols: [WS_PROTOCOL, `bearer.${Buffer.from(jwt).toString("base64url")}`],
    });
    assert.deepEqual(ok.frames, [{ result: { sum: "2", count: 1 } }, { end: {} }]);
    const token = Buffer.from("not.a.jwt").toString("base64url");
    const out = await call(`${ws}/fixture.v1.FixtureService/Chat`, ['{"text":"a"}', ""], { protocols: [WS_PROTOCOL, `bearer.${token}`] });
    assert.deepEqual(out.frames, [{ error: { code: 16, message: "unauthenticated", details: [] } }]);
  });

  test("a credential given twice (two entries, the last one valid) is UNAUTHENTICATED, as repeated headers are", async () => {
    const good = Buffer.from("k-1").toString("base64url");
    const other = Buffer.from("k-2").toString("base64url");
    const out = await call(`${ws}/fixture.v1.FixtureService/Chat`, ['{"text":"a"}', ""], {
      protocols: [WS_PROTOCOL, `api-key.${other}`, `api-key.${good}`], // the valid one last: it would win if one replaced the other
    });
    assert.deepEqual(out.frames, [{ error: { code: 16, message: "unauthenticated", details: [] } }]);
  });
});
