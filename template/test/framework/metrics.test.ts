import assert from "node:assert/strict";
import { connect as http2Connect, constants as http2Constants } from "node:http2";
import { describe, test } from "node:test";
import { setTimeout as sleep } from "node:timers/promises";
import { gzipSync } from "node:zlib";
import { Code } from "../../src/framework/index.js";
import { startTestServer, type TestServer } from "../../src/framework/testing/harness.js";
import { statusOf } from "../../src/framework/testing/status.js";
import { Health } from "../../src/gen/grpc/health/v1/health_pb.js";
import { FixtureService } from "../gen/fixture/v1/fixture_pb.js";
import { fixtureService } from "./fixtures/fixture-service.js";
import { bufCurl } from "./support/buf-curl.js";

const SERVICE = "fixture.v1.FixtureService";
const METHODS = [
  { grpc_type: "unary", grpc_method: "Echo" },
  { grpc_type: "server_stream", grpc_method: "Countdown" },
  { grpc_type: "unary", grpc_method: "Fail" },
  { grpc_type: "client_stream", grpc_method: "Sum" },
  { grpc_type: "bidi_stream", grpc_method: "Chat" },
];
const ROUTES = [
  ["POST", "/api/v1/echo"],
  ["GET", "/api/v1/echo/{message}"],
  ["GET", "/api/v1/countdown/{from}"],
  ["POST", "/api/v1/countdown"],
  ["POST", "/api/v1/fail"],
  ["POST", "/api/v1/sum"],
  ["POST", "/api/v1/chat"],
] as const;
const DEFAULT_BUCKETS = ["0.005", "0.01", "0.025", "0.05", "0.1", "0.25", "0.5", "1", "2.5", "5", "10", "+Inf"];

interface Sample {
  name: string;
  labels: Record<string, string>;
  value: number;
}

/** The samples of a Prometheus text exposition. */
function parse(text: string): Sample[] {
  const samples: Sample[] = [];
  for (const line of text.split("\n")) {
    if (line === "" || line.startsWith("#")) continue;
    const m = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})? (\S+)$/.exec(line);
    assert.ok(m, `unparsable line: ${line}`);
    const labels: Record<string, string> = {};
    for (const l of m[2]?.matchAll(/([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"/g) ?? []) labels[l[1]!] = l[2]!;
    samples.push({ name: m[1]!, labels, value: Number(m[3]) });
  }
  return samples;
}

class Scrape {
  constructor(
    readonly text: string,
    readonly samples: Sample[],
  ) {}

  /** The samples of `name` whose labels include all of `labels`. */
  find(name: string, labels: Record<string, string> = {}): Sample[] {
    return this.samples.filter((s) => s.name === name && Object.entries(labels).every(([k, v]) => s.labels[k] === v));
  }

  /** The one sample of `name` with exactly these labels (undefined if the series does not exist). */
  value(name: string, labels: Record<string, string>): number | undefined {
    const wanted = Object.entries(labels);
    const found = this.samples.filter(
      (s) => s.name === name && Object.keys(s.labels).length === wanted.length && wanted.every(([k, v]) => s.labels[k] === v),
    );
    assert.ok(found.length <= 1, `${name} ${JSON.stringify(labels)} is ambiguous`);
    return found[0]?.value;
  }

  /** gRPC and HTTP samples only (process metrics change by themselves). */
  /** The series that count calls (not the in-flight gauge: a probe's stream may still be closing when scraped). */
  served(): Sample[] {
    return this.samples.filter((s) => /^(grpc|http)_/.test(s.name) && s.name !== "grpc_server_calls_in_flight");
  }
}

async function scrape(baseUrl: string): Promise<Scrape> {
  const res = await fetch(`${baseUrl}/metrics`);
  assert.equal(res.status, 200);
  assert.equal(res.headers.get("content-type"), "text/plain; version=0.0.4; charset=utf-8");
  const text = await res.text();
  return new Scrape(text, parse(text));
}

const grpc = (method: string, extra: Record<string, string> = {}) => {
  const type = METHODS.find((m) => m.grpc_method === method)!.grpc_type;
  return { grpc_type: type, grpc_service: SERVICE, grpc_method: method, ...extra };
};
const http = (method: string, route: string, status: number) => ({ method, route, status_code: String(status) });

const codeOfCall = async (call: Promise<unknown>) => (await statusOf(call)).code;

function post(server: TestServer, path: string, body: unknown): Promise<Response> {
  return fetch(`${server.httpUrl}${path}`, { method: "POST", body: JSON.stringify(body), headers: { "content-type": "application/json" } });
}

/** One gRPC message frame: the compressed flag, the length (as sent, even if it lies) and the bytes. */
function frame(bytes: Buffer, { compressed = false, length = bytes.length } = {}): Buffer {
  const head = Buffer.alloc(5);
  head.writeUInt8(compressed ? 1 : 0, 0);
  head.writeUInt32BE(length, 1);
  return Buffer.concat([head, bytes]);
}

/** Sends one raw gRPC request over node:http2 (no client library to tidy it up); resolves with the grpc-status it got. */
function rawGrpc(address: string, path: string, body: Buffer, headers: Record<string, string> = {}): Promise<number> {
  return new Promise((resolve, reject) => {
    const session = http2Connect(`http://${address}`);
    session.on("error", reject);
    const req = session.request({ ":method": "POST", ":path": path, "content-type": "application/grpc", te: "trailers", ...headers });
    let status: string | undefined;
    const note = (h: Record<string, unknown>) => {
      if (h["grpc-status"] !== undefined) status = String(h["grpc-status"]);
    };
    req.on("response", note);
    req.on("trailers", note);
    req.on("data", () => {});
    req.on("error", reject);
    req.on("close", () => {
      session.close();
      if (status === undefined) reject(new Error(`${path}: no grpc-status`));
      else resolve(Number(status));
    });
    req.end(body);
  });
}

describe("/metrics", () => {
  test("at start-up every method has its series at 0 (handled only for OK), every route its 200 series, and nothing else", async (t) => {
    const server = await startTestServer([fixtureService]);
    t.after(() => server.close());
    const m = await scrape(server.httpUrl);
    for (const { grpc_method } of METHODS) {
      for (const family of ["grpc_server_started_total", "grpc_server_msg_received_total", "grpc_server_msg_sent_total"]) {
        assert.equal(m.value(family, grpc(grpc_method)), 0, `${family} ${grpc_method}`);
      }
      assert.equal(m.value("grpc_server_handled_total", grpc(grpc_method, { grpc_code: "OK" })), 0);
      assert.equal(m.find("grpc_server_handled_total", grpc(grpc_method)).length, 1, "only the OK series exists");
      assert.equal(m.value("grpc_server_rate_limited_total", grpc(grpc_method)), 0);
      assert.equal(m.value("grpc_server_handling_seconds_count", grpc(grpc_method)), 0);
      assert.deepEqual(
        m.find("grpc_server_handling_seconds_bucket", grpc(grpc_method)).map((s) => s.labels.le),
        DEFAULT_BUCKETS,
      );
    }
    for (const [method, route] of ROUTES) {
      assert.equal(m.value("http_server_requests_total", http(method, route, 200)), 0, `${method} ${route}`);
      assert.equal(m.value("http_server_request_duration_seconds_count", http(method, route, 200)), 0);
    }
    // No series for the operational routes (health, /metrics, Swagger…): only the fixture's gateway routes.
    const others = m
      .find("http_server_requests_total")
      .filter((s) => !ROUTES.some(([method, route]) => s.labels.method === method && s.labels.route === route));
    assert.deepEqual(others, [], "no other HTTP series");
    const services = new Set(m.served().map((s) => s.labels.grpc_service ?? SERVICE));
    assert.deepEqual([...services], [SERVICE], "health and reflection have no series");
    assert.ok(m.find("process_cpu_user_seconds_total").length === 1, "Node process metrics are there");
    assert.ok(m.find("nodejs_heap_size_used_bytes").length === 1);
    assert.doesNotMatch(m.text, /nodejs_active_\w+_total/, "the gauges promtool rejects are dropped");
  });

  test("gRPC and HTTP calls are counted exactly, by method and code; a stream's messages in msg_sent", async (t) => {
    const server = await startTestServer([fixtureService]);
    t.after(() => server.close());
    const client = server.client(FixtureService);
    await client.echo({ message: "one" });
    await client.echo({ message: "two" });
    assert.equal(await codeOfCall(client.fail({ code: Code.INVALID_ARGUMENT, message: "bad" })), Code.INVALID_ARGUMENT);
    assert.equal(await codeOfCall(client.fail({ panic: true })), Code.INTERNAL);
    await client.fail({ code: 0 });
    let received = 0;
    for await (const _ of client.countdown({ from: 4 })) received++;
    assert.equal(received, 4);
    // Through the gateway: the same chain runs, so these count in the gRPC families too.
    assert.equal((await post(server, "/api/v1/fail", { code: Code.NOT_FOUND })).status, 404);
    const ndjson = await (await fetch(`${server.httpUrl}/api/v1/countdown/3`)).text();
    assert.equal(ndjson.trim().split("\n").length, 3);

    const m = await scrape(server.httpUrl);
    const handled = (method: string, code: string) => m.value("grpc_server_handled_total", grpc(method, { grpc_code: code }));
    assert.equal(m.value("grpc_server_started_total", grpc("Echo")), 2);
    assert.equal(m.value("grpc_server_msg_received_total", grpc("Echo")), 2);
    assert.equal(m.value("grpc_server_msg_sent_total", grpc("Echo")), 2);
    assert.equal(handled("Echo", "OK"), 2);

    assert.equal(m.value("grpc_server_started_total", grpc("Fail")), 4);
    assert.equal(handled("Fail", "OK"), 1);
    assert.equal(handled("Fail", "InvalidArgument"), 1);
    assert.equal(handled("Fail", "Internal"), 1);
    assert.equal(handled("Fail", "NotFound"), 1);
    assert.equal(m.find("grpc_server_handled_total", grpc("Fail")).length, 4, "no series for codes never returned");
    assert.equal(m.value("grpc_server_msg_sent_total", grpc("Fail")), 1, "failed unary calls send nothing");

    assert.equal(m.value("grpc_server_started_total", grpc("Countdown")), 2);
    assert.equal(m.value("grpc_server_msg_received_total", grpc("Countdown")), 2);
    assert.equal(m.value("grpc_server_msg_sent_total", grpc("Countdown")), 7, "4 over gRPC + 3 over HTTP");
    assert.equal(handled("Countdown", "OK"), 2);

    assert.equal(m.value("grpc_server_handling_seconds_count", grpc("Fail")), 4);
    assert.equal(m.value("grpc_server_handling_seconds_bucket", grpc("Fail", { le: "+Inf" })), 4);
    assert.ok(m.value("grpc_server_handling_seconds_sum", grpc("Fail"))! > 0);

    assert.equal(m.value("http_server_requests_total", http("POST", "/api/v1/fail", 404)), 1);
    assert.equal(m.value("http_server_requests_total", http("POST", "/api/v1/fail", 200)), 0);
    assert.equal(m.value("http_server_requests_total", http("GET", "/api/v1/countdown/{from}", 200)), 1);
    assert.equal(m.value("http_server_request_duration_seconds_count", http("GET", "/api/v1/countdown/{from}", 200)), 1);
    assert.deepEqual(
      m.find("http_server_request_duration_seconds_bucket", http("POST", "/api/v1/fail", 404)).map((s) => s.labels.le),
      DEFAULT_BUCKETS,
    );
  });

  test("msg_sent counts each streamed message as it goes; a cancelled stream ends Canceled", async (t) => {
    const server = await startTestServer([fixtureService]);
    t.after(() => server.close());
    const client = server.client(FixtureService);
    const controller = new AbortController();
    const stream = client.countdown({ from: 100, intervalMs: 400 }, { signal: controller.signal })[Symbol.asyncIterator]();
    await stream.next();
    await stream.next();
    let m = await scrape(server.httpUrl);
    assert.equal(m.value("grpc_server_msg_sent_total", grpc("Countdown")), 2, "visible while the stream runs");
    assert.equal(m.value("grpc_server_handled_total", grpc("Countdown", { grpc_code: "OK" })), 0, "not handled yet");
    controller.abort();
    await stream.next().catch(() => {});
    for (let i = 0; i < 50 && !m.value("grpc_server_handled_total", grpc("Countdown", { grpc_code: "Canceled" })); i++) {
      await sleep(20);
      m = await scrape(server.httpUrl);
    }
    assert.equal(m.value("grpc_server_handled_total", grpc("Countdown", { grpc_code: "Canceled" })), 1);
    assert.equal(m.value("grpc_server_handled_total", grpc("Countdown", { grpc_code: "OK" })), 0);
    assert.equal(m.value("grpc_server_handling_seconds_count", grpc("Countdown")), 1);
  });

  test("the histogram has the configured buckets, and is absent with ENABLE_PROMETHEUS_GRPC_HISTOGRAM=false", async (t) => {
    const custom = await startTestServer([fixtureService], { PROMETHEUS_GRPC_HISTOGRAM_BUCKETS: "0.5,0.001,0.1" });
    t.after(() => custom.close());
    await custom.client(FixtureService).echo({ message: "hi" });
    const m = await scrape(custom.httpUrl);
    const buckets = m.find("grpc_server_handling_seconds_bucket", grpc("Echo"));
    assert.deepEqual(
      buckets.map((s) => s.labels.le),
      ["0.001", "0.1", "0.5", "+Inf"],
    );
    assert.equal(buckets.at(-1)!.value, 1);
    assert.ok(
      buckets.every((b, i) => i === 0 || b.value >= buckets[i - 1]!.value),
      "cumulative",
    );

    const off = await startTestServer([fixtureService], { ENABLE_PROMETHEUS_GRPC_HISTOGRAM: "false" });
    t.after(() => off.close());
    await off.client(FixtureService).echo({ message: "hi" });
    const n = await scrape(off.httpUrl);
    assert.doesNotMatch(n.text, /grpc_server_handling_seconds/);
    assert.equal(n.value("grpc_server_handled_total", grpc("Echo", { grpc_code: "OK" })), 1, "the counters stay");
  });

  test("requests grpc-js refuses before the handler (undecodable, oversized, unknown compression, bad grpc-timeout, two messages) are counted once with the code the client got", async (t) => {
    const server = await startTestServer([fixtureService], { GRPC_MAX_RECV_MSG_SIZE: "1024" });
    t.after(() => server.close());
    const send = (method: string, body: Buffer, headers?: Record<string, string>) =>
      rawGrpc(server.grpcAddress, `/${SERVICE}/${method}`, body, headers);
    // Field 1 (a string) claims 100 bytes and has 1: protobuf-es cannot decode it.
    const garbage = frame(Buffer.from([0x0a, 0x64, 0x41]));
    const echo = frame(Buffer.from([0x0a, 0x02, 0x68, 0x69])); // EchoRequest{message: "hi"}
    assert.equal(await send("Echo", garbage), Code.INTERNAL);
    assert.equal(await send("Echo", frame(Buffer.alloc(2048))), Code.RESOURCE_EXHAUSTED);
    assert.equal(
      await send("Echo", frame(Buffer.from("not snappy"), { compressed: true }), { "grpc-encoding": "snappy" }),
      Code.UNIMPLEMENTED,
    );
    assert.equal(await send("Echo", Buffer.concat([echo, echo])), Code.UNIMPLEMENTED);
    assert.equal(await send("Echo", echo, { "grpc-timeout": "soon" }), Code.INTERNAL);
    assert.equal(await send("Echo", echo), Code.OK);
    const gzipped = frame(gzipSync(Buffer.from([0x0a, 0x02, 0x68, 0x69])), { compressed: true });
    assert.equal(await send("Echo", gzipped, { "grpc-encoding": "gzip" }), Code.OK);
    assert.equal(await send("Countdown", garbage), Code.INTERNAL);
    // Not ours: health and unknown methods stay out of the metrics.
    assert.equal(await rawGrpc(server.grpcAddress, "/grpc.health.v1.Health/Check", garbage), Code.INTERNAL);
    assert.equal(await send("NoSuchMethod", echo), Code.UNIMPLEMENTED);

    const m = await scrape(server.httpUrl);
    assert.equal(m.value("grpc_server_started_total", grpc("Echo")), 7);
    assert.equal(m.value("grpc_server_handled_total", grpc("Echo", { grpc_code: "Internal" })), 2);
    assert.equal(m.value("grpc_server_handled_total", grpc("Echo", { grpc_code: "ResourceExhausted" })), 1);
    assert.equal(m.value("grpc_server_handled_total", grpc("Echo", { grpc_code: "Unimplemented" })), 2);
    assert.equal(m.value("grpc_server_handled_total", grpc("Echo", { grpc_code: "OK" })), 2, "good calls count once");
    assert.equal(m.value("grpc_server_msg_received_total", grpc("Echo")), 2, "only the messages that were decoded");
    assert.equal(m.value("grpc_server_handling_seconds_count", grpc("Echo")), 2, "latency only of handled calls");
    assert.equal(m.value("grpc_server_started_total", grpc("Countdown")), 1);
    assert.equal(m.value("grpc_server_handled_total", grpc("Countdown", { grpc_code: "Internal" })), 1);
    assert.ok(!m.served().some((s) => /health|NoSuchMethod/i.test(Object.values(s.labels).join(" "))));
  });

  test("a client or bidi stream whose message grpc-js cannot read (undecodable, oversized) is counted with the code the client got, not Canceled", async (t) => {
    const server = await startTestServer([fixtureService], { GRPC_MAX_RECV_MSG_SIZE: "1024" });
    t.after(() => server.close());
    const send = (method: string, body: Buffer) => rawGrpc(server.grpcAddress, `/${SERVICE}/${method}`, body);
    const one = frame(Buffer.from([0x08, 0x01])); // a valid first message: field 1 = 1
    const garbage = frame(Buffer.from([0x0a, 0x64, 0x41]));
    const oversized = frame(Buffer.alloc(2048));
    for (const method of ["Sum", "Chat"]) {
      assert.equal(await send(method, Buffer.concat([one, garbage])), Code.INTERNAL, method);
      assert.equal(await send(method, oversized), Code.RESOURCE_EXHAUSTED, method);
    }
    const m = await scrape(server.httpUrl);
    for (const method of ["Sum", "Chat"]) {
      assert.equal(m.value("grpc_server_started_total", grpc(method)), 2, method);
      assert.equal(m.value("grpc_server_handled_total", grpc(method, { grpc_code: "Internal" })), 1, method);
      assert.equal(m.value("grpc_server_handled_total", grpc(method, { grpc_code: "ResourceExhausted" })), 1, method);
      assert.equal(m.value("grpc_server_handled_total", grpc(method, { grpc_code: "Canceled" })), undefined, method);
    }
  });

  test("health, readiness, reflection and /metrics itself are never counted", async (t) => {
    const server = await startTestServer([fixtureService]);
    t.after(() => server.close());
    await server.client(FixtureService).echo({ message: "warm up" });
    const before = (await scrape(server.httpUrl)).served();

    const health = server.client(Health);
    assert.equal((await health.check({ service: "" })).status, 1);
    assert.equal((await health.check({ service: SERVICE })).status, 1);
    await bufCurl("--list-methods", `http://${server.grpcAddress}`);
    for (const path of ["/healthcheck", "/readycheck", "/metrics", "/metrics"]) {
      assert.equal((await fetch(`${server.httpUrl}${path}`)).status, 200, path);
    }

    const after = (await scrape(server.httpUrl)).served();
    assert.deepEqual(after, before);
    assert.ok(!after.some((s) => /health|reflection|metrics|readycheck/i.test(Object.values(s.labels).join(" "))));
  });

  test("rate-limit rejections are counted by method, and as started and handled ResourceExhausted", async (t) => {
    const server = await startTestServer([fixtureService], { RATE_LIMIT_PER_SECOND: "0.1", RATE_LIMIT_BURST: "1" });
    t.after(() => server.close());
    const client = server.client(FixtureService);
    await client.echo({ message: "takes the only token" });
    assert.equal(await codeOfCall(client.echo({ message: "rejected" })), Code.RESOURCE_EXHAUSTED);
    assert.equal(await codeOfCall(client.fail({ code: 0 })), Code.RESOURCE_EXHAUSTED);
    assert.equal((await fetch(`${server.httpUrl}/api/v1/echo/rejected`)).status, 429);
    const m = await scrape(server.httpUrl);
    assert.equal(m.value("grpc_server_rate_limited_total", grpc("Echo")), 2);
    assert.equal(m.value("grpc_server_rate_limited_total", grpc("Fail")), 1);
    assert.equal(m.value("grpc_server_rate_limited_total", grpc("Countdown")), 0);
    assert.equal(m.value("grpc_server_started_total", grpc("Echo")), 3);
    assert.equal(m.value("grpc_server_handled_total", grpc("Echo", { grpc_code: "OK" })), 1);
    assert.equal(m.value("grpc_server_handled_total", grpc("Echo", { grpc_code: "ResourceExhausted" })), 2);
    assert.equal(m.value("grpc_server_handled_total", grpc("Fail", { grpc_code: "ResourceExhausted" })), 1);
    assert.equal(m.value("http_server_requests_total", http("GET", "/api/v1/echo/{message}", 429)), 1);
  });

  for (const mode of ["tcp", "in-process"]) {
    test(`calls rejected by auth, validation and the timeout are counted started and handled with their code (gateway ${mode})`, async (t) => {
      const key = "metrics-test-api-key";
      const server = await startTestServer([fixtureService], {
        API_KEYS: key,
        HTTP_HEADER_PREFIXES: "x-api-key",
        GRPC_SERVER_DEFAULT_TIMEOUT_IN_SECONDS: "0.2",
        GATEWAY_MODE: mode,
      });
      t.after(() => server.close());
      const client = server.client(FixtureService);
      const auth = { metadata: { "x-api-key": key } };
      assert.equal(await codeOfCall(client.echo({ message: "no key" })), Code.UNAUTHENTICATED);
      assert.equal((await fetch(`${server.httpUrl}/api/v1/echo/no-key`)).status, 401);
      assert.equal(await codeOfCall(client.echo({ message: "" }, auth)), Code.INVALID_ARGUMENT);
      assert.equal(await codeOfCall(client.echo({ message: "slow", delayMs: 5000 }, auth)), Code.DEADLINE_EXCEEDED);
      assert.equal((await client.echo({ message: "ok" }, auth)).message, "ok");
      const m = await scrape(server.httpUrl);
      assert.equal(m.value("grpc_server_started_total", grpc("Echo")), 5);
      assert.equal(m.value("grpc_server_msg_received_total", grpc("Echo")), 5);
      assert.equal(m.value("grpc_server_msg_sent_total", grpc("Echo")), 1);
      assert.equal(m.value("grpc_server_handled_total", grpc("Echo", { grpc_code: "Unauthenticated" })), 2);
      assert.equal(m.value("grpc_server_handled_total", grpc("Echo", { grpc_code: "InvalidArgument" })), 1);
      assert.equal(m.value("grpc_server_handled_total", grpc("Echo", { grpc_code: "DeadlineExceeded" })), 1);
      assert.equal(m.value("grpc_server_handled_total", grpc("Echo", { grpc_code: "OK" })), 1);
      assert.equal(m.value("grpc_server_handling_seconds_count", grpc("Echo")), 5);
    });
  }

  test("HTTP metrics carry the route template, never the raw path; unmatched requests share one label", async (t) => {
    const server = await startTestServer([fixtureService]);
    t.after(() => server.close());
    for (const word of ["alpha", "beta", "gamma%2Fdelta"]) assert.equal((await fetch(`${server.httpUrl}/api/v1/echo/${word}`)).status, 200);
    assert.equal((await post(server, "/api/v1/echo", { message: "posted" })).status, 200);
    assert.equal((await fetch(`${server.httpUrl}/no/such/thing-1`)).status, 404);
    assert.equal((await fetch(`${server.httpUrl}/no/such/thing-2`)).status, 404);
    assert.equal((await fetch(`${server.httpUrl}/api/v1/fail`)).status, 405, "known path, wrong method");
    const m = await scrape(server.httpUrl);
    assert.equal(m.value("http_server_requests_total", http("GET", "/api/v1/echo/{message}", 200)), 3);
    assert.equal(m.value("http_server_request_duration_seconds_count", http("GET", "/api/v1/echo/{message}", 200)), 3);
    assert.equal(m.value("http_server_requests_total", http("POST", "/api/v1/echo", 200)), 1);
    assert.equal(m.value("http_server_requests_total", http("GET", "unmatched", 404)), 2);
    assert.equal(m.value("http_server_requests_total", http("GET", "unmatched", 405)), 1);
    assert.doesNotMatch(m.text, /alpha|beta|gamma|thing-/);
  });

  test("an HTTP stream the client leaves mid-way is counted once, as 499, and Canceled on the gRPC side", async (t) => {
    const server = await startTestServer([fixtureService]);
    t.after(() => server.close());
    const controller = new AbortController();
    const res = await fetch(`${server.httpUrl}/api/v1/countdown/100?intervalMs=50`, { signal: controller.signal });
    await res.body!.getReader().read();
    controller.abort();
    const route = http("GET", "/api/v1/countdown/{from}", 499);
    let m = await scrape(server.httpUrl);
    for (let i = 0; i < 50 && !m.value("grpc_server_handled_total", grpc("Countdown", { grpc_code: "Canceled" })); i++) {
      await sleep(20);
      m = await scrape(server.httpUrl);
    }
    assert.equal(m.value("http_server_requests_total", route), 1);
    assert.equal(m.value("http_server_request_duration_seconds_count", route), 1);
    assert.equal(
      m.find("http_server_requests_total", { route: "/api/v1/countdown/{from}" }).reduce((n, s) => n + s.value, 0),
      1,
    );
    assert.equal(m.value("grpc_server_handled_total", grpc("Countdown", { grpc_code: "Canceled" })), 1);
  });

  for (const mode of ["tcp", "in-process"]) {
    test(`a REST call over HTTP/2 (gateway mode ${mode}) whose client resets the stream is counted once, as 499, and Canceled`, async (t) => {
      const server = await startTestServer([fixtureService], { GATEWAY_MODE: mode });
      t.after(() => server.close());
      const session = http2Connect(server.httpUrl);
      session.on("error", () => {});
      t.after(() => session.close());
      const stream = session.request({
        ":method": "POST",
        ":path": "/api/v1/echo",
        "content-type": "application/json",
        "x-debug-log-level": "debug",
      });
      stream.on("error", () => {});
      stream.end(JSON.stringify({ message: "slow", delayMs: 5000 }));
      // Its handler says "echo received" once it runs: then the client leaves.
      while (!server.logs.some((l) => l.msg === "echo received")) await sleep(5);
      stream.close(http2Constants.NGHTTP2_CANCEL);
      let m = await scrape(server.httpUrl);
      while (m.value("grpc_server_handled_total", grpc("Echo", { grpc_code: "Canceled" })) === 0) {
        assert.equal(m.value("grpc_server_handled_total", grpc("Echo", { grpc_code: "OK" })), 0, "the handler ran to the end: counted OK");
        await sleep(20);
        m = await scrape(server.httpUrl);
      }
      assert.equal(m.value("http_server_requests_total", http("POST", "/api/v1/echo", 499)), 1);
      assert.equal(m.value("http_server_requests_total", http("POST", "/api/v1/echo", 200)), 0);
    });
  }

  test("DISABLE_PROMETHEUS=true: /metrics is 404 JSON and nothing is measured", async (t) => {
    const server = await startTestServer([fixtureService], { DISABLE_PROMETHEUS: "true" });
    t.after(() => server.close());
    const res = await fetch(`${server.httpUrl}/metrics`);
    assert.equal(res.status, 404);
    assert.deepEqual(await res.json(), { code: Code.NOT_FOUND, message: "Not Found", details: [] });
    assert.equal(server.app.metrics, undefined);
    assert.ok(!server.app.interceptorNames().includes("metrics"));
    assert.equal((await server.client(FixtureService).echo({ message: "still served" })).message, "still served");
  });
});
