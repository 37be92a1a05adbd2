/**
 * SINGLE_PORT=true: gRPC on the HTTP port too. A grpc-js client, `buf curl --protocol grpc` (which
 * learns the API by reflection), a connect-node client over HTTP/2, curl (REST over HTTP/1.1 and HTTP/2), SSE and
 * a WebSocket all call the one port, each call entering the chain once: one "response time" line and one count in
 * grpc_server_handled_total per call.
 */
import assert from "node:assert/strict";
import { execFile, execFileSync } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { after, before, describe, test } from "node:test";
import { promisify } from "node:util";
import { createClient as createConnectClient } from "@connectrpc/connect";
import { createConnectTransport, createGrpcWebTransport } from "@connectrpc/connect-node";
import { credentials } from "@grpc/grpc-js";
import { WS_PROTOCOL } from "../../src/framework/browser/websocket.js";
import { createClient } from "../../src/framework/client/client.js";
import { startTestServer, type TestServer } from "../../src/framework/testing/harness.js";
import { FixtureService } from "../gen/fixture/v1/fixture_pb.js";
import { fixtureService } from "./fixtures/fixture-service.js";
import { bufCurl } from "./support/buf-curl.js";
import { handled } from "./support/metrics.js";
import { waitFor } from "./support/wait.js";

const run = promisify(execFile);

const ECHO = "/fixture.v1.FixtureService/Echo";
const COUNTDOWN = "/fixture.v1.FixtureService/Countdown";

describe("SINGLE_PORT=true: every protocol on the HTTP port", () => {
  let server: TestServer;
  let port: string;
  before(async () => {
    server = await startTestServer([fixtureService], { SINGLE_PORT: "true" });
    port = new URL(server.httpUrl).port;
  });
  after(() => server.close());

  const lines = (method: string) => server.logs.filter((l) => l.msg === "response time" && l.grpcMethod === method).length;

  /** Runs `call` and checks it entered the chain exactly once: one more log line and one more count for `method`. */
  async function once(method: string, call: () => Promise<unknown>): Promise<void> {
    const logged = lines(method);
    const counted = await handled(server, method.slice(method.lastIndexOf("/") + 1), "OK");
    await call();
    await waitFor(() => (lines(method) > logged ? true : undefined));
    assert.equal(lines(method), logged + 1, `${method}: log lines`);
    assert.equal(await handled(server, method.slice(method.lastIndexOf("/") + 1), "OK"), counted + 1, `${method}: handled count`);
  }

  test("a grpc-js client calls unary and server streaming on the HTTP port", async () => {
    const client = createClient(FixtureService, `127.0.0.1:${port}`, { maxAttempts: 1 });
    try {
      await once(ECHO, async () => assert.equal((await client.echo({ message: "grpc-js" })).message, "grpc-js"));
      await once(COUNTDOWN, async () => {
        const seen: number[] = [];
        for await (const m of client.countdown({ from: 2 })) seen.push(m.remaining);
        assert.deepEqual(seen, [2, 1]);
      });
    } finally {
      client.close();
    }
  });

  test("buf curl --protocol grpc finds the API by reflection on the HTTP port and calls Echo", async () => {
    await once(ECHO, async () => {
      const out = await bufCurl("-d", '{"message":"buf"}', `http://127.0.0.1:${port}${ECHO}`);
      assert.equal((JSON.parse(out) as { message: string }).message, "buf");
    });
  });

  test("the gRPC health service answers on the HTTP port", async () => {
    const out = await bufCurl("-d", '{"service":""}', `http://127.0.0.1:${port}/grpc.health.v1.Health/Check`);
    assert.equal((JSON.parse(out) as { status: string }).status, "SERVING");
  });

  test("connect-node over HTTP/2 (Connect and gRPC-Web) shares the port with gRPC", async () => {
    for (const transport of [createConnectTransport, createGrpcWebTransport]) {
      const client = createConnectClient(FixtureService, transport({ baseUrl: server.httpUrl, httpVersion: "2" }));
      await once(ECHO, async () => assert.equal((await client.echo({ message: "connect" })).message, "connect"));
    }
  });

  test("curl calls REST over HTTP/1.1 and HTTP/2 (prior knowledge)", async () => {
    for (const version of ["--http1.1", "--http2-prior-knowledge"]) {
      await once(ECHO, async () => {
        const { stdout } = await run("curl", [
          "-sS",
          version,
          "-H",
          "content-type: application/json",
          "-d",
          '{"message":"curl"}',
          `${server.httpUrl}/api/v1/echo`,
        ]);
        assert.equal((JSON.parse(stdout) as { message: string }).message, "curl");
      });
    }
  });

  test("SSE streams a server stream", async () => {
    await once(COUNTDOWN, async () => {
      const res = await fetch(`${server.httpUrl}/api/v1/countdown/2`, { headers: { accept: "text/event-stream" } });
      const text = await res.text();
      assert.match(text, /"remaining":2/);
      assert.match(text, /"remaining":1/);
    });
  });

  test("a WebSocket streams a server stream", async () => {
    await once(COUNTDOWN, async () => {
      const frames = await new Promise<unknown[]>((resolve, reject) => {
        const ws = new WebSocket(`${server.httpUrl.replace(/^http/, "ws")}${COUNTDOWN}`, [WS_PROTOCOL]);
        const got: unknown[] = [];
        ws.onopen = () => {
          ws.send('{"from":2}');
          ws.send("");
        };
        ws.onmessage = (e) => got.push(JSON.parse(String(e.data)));
        ws.onclose = () => resolve(got);
        ws.onerror = () => reject(new Error("websocket failed"));
      });
      assert.deepEqual(frames, [{ result: { remaining: 2 } }, { result: { remaining: 1 } }, { end: {} }]);
    });
  });
});

describe("SINGLE_PORT=true with TLS on the HTTP port", () => {
  const dir = mkdtempSync(path.join(tmpdir(), "single-port-"));
  const file = (name: string) => path.join(dir, name);
  let server: TestServer;
  before(async () => {
    execFileSync(
      "openssl",
      [
        ...["req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes", "-days", "2"],
        ...["-subj", "/CN=localhost", "-addext", "subjectAltName=DNS:localhost"],
        ...["-keyout", file("http.key"), "-out", file("http.crt")],
      ],
      { stdio: ["ignore", "ignore", "pipe"] },
    );
    server = await startTestServer([fixtureService], {
      SINGLE_PORT: "true",
      HTTP_TLS_CERT_FILE: file("http.crt"),
      HTTP_TLS_KEY_FILE: file("http.key"),
    });
  });
  after(async () => {
    await server.close();
    rmSync(dir, { recursive: true, force: true });
  });

  test("a grpc-js client over TLS (ALPN h2) and connect-node over TLS share the port", async () => {
    const ca = readFileSync(file("http.crt"));
    const client = createClient(FixtureService, `127.0.0.1:${new URL(server.httpUrl).port}`, {
      maxAttempts: 1,
      credentials: credentials.createSsl(ca),
      channelOptions: { "grpc.ssl_target_name_override": "localhost" },
    });
    try {
      assert.equal((await client.echo({ message: "grpc over tls" })).message, "grpc over tls");
    } finally {
      client.close();
    }
    const connect = createConnectClient(
      FixtureService,
      createConnectTransport({ baseUrl: server.httpUrl, httpVersion: "2", nodeOptions: { ca, servername: "localhost" } }),
    );
    assert.equal((await connect.echo({ message: "connect over tls" })).message, "connect over tls");
  });
});

describe("SINGLE_PORT unset (the default)", () => {
  let server: TestServer;
  before(async () => {
    server = await startTestServer([fixtureService]);
  });
  after(() => server.close());

  test("a gRPC call to the HTTP port is not served as gRPC", async () => {
    const client = createClient(FixtureService, `127.0.0.1:${new URL(server.httpUrl).port}`, { maxAttempts: 1 });
    try {
      await assert.rejects(client.echo({ message: "x" }));
    } finally {
      client.close();
    }
  });
});
