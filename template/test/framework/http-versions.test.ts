/**
 * HTTP/1.1 and HTTP/2 on the one HTTP port: cleartext HTTP/2 told apart by its preface, TLS
 * (HTTP_TLS_CERT_FILE, HTTP_TLS_KEY_FILE) by ALPN. The Connect project's Node clients call every method kind
 * of the fixture API that the HTTP version allows, through Connect and gRPC-Web, each call entering the chain
 * once; REST, SSE and the health route answer over HTTP/2 too.
 */
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { once } from "node:events";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { type ClientHttp2Session, connect as connectHttp2 } from "node:http2";
import { connect as connectTcp } from "node:net";
import { tmpdir } from "node:os";
import path from "node:path";
import { after, before, describe, test } from "node:test";
import { create } from "@bufbuild/protobuf";
import { type Client, ConnectError, createClient, type Transport } from "@connectrpc/connect";
import { createConnectTransport, createGrpcWebTransport } from "@connectrpc/connect-node";
import { startTestServer, type TestServer } from "../../src/framework/testing/harness.js";
import { ChatRequestSchema, FixtureService, SumRequestSchema } from "../gen/fixture/v1/fixture_pb.js";
import { fixtureService } from "./fixtures/fixture-service.js";
import { handled } from "./support/metrics.js";

const dir = mkdtempSync(path.join(tmpdir(), "http-versions-"));
const file = (name: string) => path.join(dir, name);
before(() => {
  execFileSync(
    "openssl",
    [
      ...["req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes", "-days", "2"],
      ...["-subj", "/CN=localhost", "-addext", "subjectAltName=DNS:localhost,IP:127.0.0.1"],
      ...["-keyout", file("http.key"), "-out", file("http.crt")],
    ],
    { stdio: ["ignore", "ignore", "pipe"] },
  );
});
after(() => rmSync(dir, { recursive: true, force: true }));

type Version = "1.1" | "2";
type Wire = "connect" | "grpc-web";

function transport(wire: Wire, baseUrl: string, httpVersion: Version, ca: Buffer | undefined): Transport {
  const nodeOptions = ca ? { ca } : {};
  return wire === "connect"
    ? createConnectTransport({ baseUrl, httpVersion, nodeOptions })
    : createGrpcWebTransport({ baseUrl, httpVersion, nodeOptions });
}

async function* messages<T>(items: T[]): AsyncGenerator<T> {
  for (const item of items) yield item;
}

/** grpc_server_handled_total of every method and code, summed per method. */
async function handledPerMethod(server: TestServer, ca: Buffer | undefined): Promise<Map<string, number>> {
  const text = await get(server.httpUrl, "/metrics", ca);
  const counts = new Map<string, number>();
  for (const line of text.split("\n")) {
    if (!line.startsWith("grpc_server_handled_total{")) continue;
    const method = /grpc_method="([^"]+)"/.exec(line)![1]!;
    counts.set(method, (counts.get(method) ?? 0) + Number(line.slice(line.lastIndexOf(" ") + 1)));
  }
  return counts;
}

/** A GET over HTTP/2 (prior knowledge, or TLS), the body as text; asserts the response came over HTTP/2. */
async function get(baseUrl: string, pathname: string, ca: Buffer | undefined, headers: Record<string, string> = {}): Promise<string> {
  const session = connectHttp2(baseUrl, ca ? { ca } : {});
  try {
    return await requestText(session, pathname, headers);
  } finally {
    session.close();
  }
}

function requestText(session: ClientHttp2Session, pathname: string, headers: Record<string, string> = {}, body?: string): Promise<string> {
  return new Promise((resolve, reject) => {
    const stream = session.request({ ":path": pathname, ":method": body === undefined ? "GET" : "POST", ...headers });
    let text = "";
    let status = 0;
    stream.on("response", (h) => (status = Number(h[":status"])));
    stream.setEncoding("utf8");
    stream.on("data", (chunk: string) => (text += chunk));
    stream.on("end", () => (status === 200 ? resolve(text) : reject(new Error(`${pathname}: ${status} ${text}`))));
    stream.on("error", reject);
    stream.end(body);
  });
}

for (const tls of [false, true]) {
  describe(tls ? "TLS on the HTTP port (ALPN h2, http/1.1)" : "cleartext HTTP/1.1 and HTTP/2 on the HTTP port", () => {
    let server: TestServer;
    let ca: Buffer | undefined;
    before(async () => {
      ca = tls ? readFileSync(file("http.crt")) : undefined;
      server = await startTestServer(
        [fixtureService],
        tls ? { HTTP_TLS_CERT_FILE: file("http.crt"), HTTP_TLS_KEY_FILE: file("http.key") } : {},
      );
      if (tls) assert.match(server.httpUrl, /^https:\/\//);
    });
    after(() => server.close());

    for (const version of ["2", "1.1"] as Version[]) {
      for (const wire of ["connect", "grpc-web"] as Wire[]) {
        // Connect serves client streaming over HTTP/1.1 too (a streamed request body); bidi needs HTTP/2, and
        // gRPC-Web's streaming requests are not served by the Connect project's Node clients over HTTP/1.1.
        const kinds =
          version === "2"
            ? ["unary", "server", "client", "bidi"]
            : wire === "connect"
              ? ["unary", "server", "client"]
              : ["unary", "server"];
        test(`${wire} over HTTP/${version}: ${kinds.join(", ")} each enter the chain once`, async () => {
          const client: Client<typeof FixtureService> = createClient(FixtureService, transport(wire, server.httpUrl, version, ca));
          const before = await handledPerMethod(server, ca);
          const echo = await client.echo({ message: `hello over ${version}` });
          assert.equal(echo.message, `hello over ${version}`);
          const seen: number[] = [];
          for await (const m of client.countdown({ from: 3 })) seen.push(m.remaining);
          assert.deepEqual(seen, [3, 2, 1]);
          const expected = new Map([
            ["Echo", 1],
            ["Countdown", 1],
          ]);
          if (kinds.includes("client")) {
            const sum = await client.sum(messages([1n, 2n, 39n].map((value) => create(SumRequestSchema, { value }))));
            assert.equal(sum.sum, 42n);
            assert.equal(sum.count, 3);
            expected.set("Sum", 1);
          }
          if (kinds.includes("bidi")) {
            const answers: string[] = [];
            for await (const m of client.chat(messages(["a", "b"].map((text) => create(ChatRequestSchema, { text }))))) {
              answers.push(`${m.seq}:${m.text}`);
            }
            assert.equal(answers.length, 2);
            expected.set("Chat", 1);
          }
          const after = await handledPerMethod(server, ca);
          for (const [method, n] of expected) assert.equal((after.get(method) ?? 0) - (before.get(method) ?? 0), n, method);
        });
      }
    }

    test("bidi over HTTP/1.1 is refused with 505 HTTP Version Not Supported (the Connect protocol's answer), not a hang", async () => {
      const client = createClient(FixtureService, transport("connect", server.httpUrl, "1.1", ca));
      const err = await (async () => {
        for await (const _ of client.chat(messages([create(ChatRequestSchema, { text: "a" })]))) {
          // no answer expected
        }
      })().catch((e: unknown) => e);
      assert.ok(err instanceof ConnectError);
      assert.match(err.rawMessage, /HTTP 505/);
    });

    test("REST, SSE, NDJSON streams (both ways) and the health route answer over HTTP/2", async () => {
      const session = connectHttp2(server.httpUrl, ca ? { ca } : {});
      try {
        assert.match(await requestText(session, "/healthcheck"), /"app":/);
        const echo = await requestText(
          session,
          "/api/v1/echo",
          { "content-type": "application/json" },
          JSON.stringify({ message: "rest" }),
        );
        assert.equal((JSON.parse(echo) as { message: string }).message, "rest");
        const sse = await requestText(session, "/api/v1/countdown/2", { accept: "text/event-stream" });
        assert.match(sse, /data: .*"remaining":2/);
        assert.match(sse, /data: .*"remaining":1/);
        const ndjson = await requestText(session, "/api/v1/countdown/2");
        assert.deepEqual(
          ndjson
            .trim()
            .split("\n")
            .map((l) => JSON.parse(l) as unknown),
          [{ result: { remaining: 2 } }, { result: { remaining: 1 } }],
        );
        const sum = await requestText(
          session,
          "/api/v1/sum",
          { "content-type": "application/x-ndjson" },
          '{"value":1}\n{"value":2}\n{"value":39}\n',
        );
        assert.deepEqual(JSON.parse(sum), { sum: "42", count: 3 });
      } finally {
        session.close();
      }
    });
  });
}

describe("telling the versions apart", () => {
  let server: TestServer;
  before(async () => {
    server = await startTestServer([fixtureService]);
  });
  after(() => server.close());

  test("an HTTP/1.1 request sent one byte at a time, starting like the preface ('P'), is served as HTTP/1.1", async () => {
    const { port } = new URL(server.httpUrl);
    const socket = connectTcp(Number(port), "127.0.0.1");
    await once(socket, "connect");
    const body = JSON.stringify({ message: "slow" });
    const request = `POST /api/v1/echo HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: ${body.length}\r\nConnection: close\r\n\r\n${body}`;
    let answer = "";
    socket.setEncoding("utf8");
    socket.on("data", (d: string) => (answer += d));
    for (const ch of request.slice(0, 3)) {
      socket.write(ch);
      await new Promise((r) => setImmediate(r));
    }
    socket.write(request.slice(3)); // Connection: close: the server closes once it has answered
    await once(socket, "close");
    assert.match(answer, /^HTTP\/1\.1 200/);
    assert.match(answer, /"message":"slow"/);
  });

  test("HTTP/2 connections are told the port's limits: 100 concurrent requests, 16 KiB of request headers", async () => {
    const session = connectHttp2(server.httpUrl);
    try {
      const [settings] = (await once(session, "remoteSettings")) as [{ maxConcurrentStreams?: number; maxHeaderListSize?: number }];
      assert.equal(settings.maxConcurrentStreams, 100);
      assert.equal(settings.maxHeaderListSize, 16_384);
    } finally {
      session.close();
    }
  });

  test("a cleartext HTTP/2 client that ends its socket (FIN) has its connection closed and its calls cancelled, not held half-open", async () => {
    const { port } = new URL(server.httpUrl);
    const socket = connectTcp(Number(port), "127.0.0.1");
    const session = connectHttp2(server.httpUrl, { createConnection: () => socket });
    session.on("error", () => {});
    const stream = session.request({ ":path": "/api/v1/countdown/600?interval_ms=100", ":method": "GET" });
    stream.on("error", () => {});
    await once(stream, "data"); // the call is under way
    const cancelledBefore = await handled(server, "Countdown", "Canceled");
    const closed = once(socket, "close");
    socket.end(); // the client sends nothing more, not even a PING's acknowledgement: it is gone
    await closed; // before: held open until the stream ended (a minute here)
    while ((await handled(server, "Countdown", "Canceled")) === cancelledBefore) await new Promise((r) => setImmediate(r));
  });

  test("stopping sends an HTTP/2 connection a GOAWAY: the stream in flight finishes, the connection then closes", async () => {
    const stopping = await startTestServer([fixtureService]);
    const session = connectHttp2(stopping.httpUrl);
    const goaway = once(session, "goaway");
    const closed = once(session, "close");
    const stream = session.request({ ":path": "/api/v1/countdown/3?interval_ms=100", ":method": "GET" });
    stream.setEncoding("utf8");
    let text = "";
    const first = once(stream, "data");
    stream.on("data", (chunk: string) => (text += chunk));
    const ended = once(stream, "end");
    await first;
    const stopped = stopping.close();
    await goaway;
    await ended;
    await closed;
    await stopped;
    assert.equal(text.trim().split("\n").length, 3, text);
  });

  test("a connection that sends nothing is closed when the server stops, without holding the shutdown", async () => {
    const { port } = new URL(server.httpUrl);
    const socket = connectTcp(Number(port), "127.0.0.1");
    await once(socket, "connect");
    const closed = once(socket, "close");
    await server.app.stop();
    await closed;
    assert.ok(
      !server.logs.some((l) => l.msg === "shutdown budget spent: servers force-stopped"),
      "the silent connection held the shutdown",
    );
  });
});
