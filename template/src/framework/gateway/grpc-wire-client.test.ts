/**
 * The gateway's node:http2 gRPC client against a scripted HTTP/2 server: what goes on the wire, and how
 * headers, trailers, resets and lost connections become metadata and statuses.
 */
import assert from "node:assert/strict";
import { once } from "node:events";
import { mkdtempSync, rmSync } from "node:fs";
import {
  constants,
  createServer,
  type Http2Server,
  type IncomingHttpHeaders,
  type OutgoingHttpHeaders,
  type ServerHttp2Session,
  type ServerHttp2Stream,
} from "node:http2";
import type { AddressInfo, Socket } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, beforeEach, describe, test } from "node:test";
import * as grpc from "@grpc/grpc-js";
import { Metadata } from "@grpc/grpc-js";
import { Code, GrpcError } from "../call/status.js";
import { encodeFrame, FrameDecoder } from "./grpc-frames.js";
import { GrpcWireClient, type WireRequest } from "./grpc-wire-client.js";

type Handler = (stream: ServerHttp2Stream, headers: IncomingHttpHeaders, request: string) => void;

/** An h2c server that hands each call (with its decoded request message) to the handler of its path. */
class ScriptedServer {
  readonly handlers = new Map<string, Handler>();
  readonly sessions = new Set<ServerHttp2Session>();
  /** The raw connections, to drop one as a crash would (an HTTP/2 session's own socket cannot be touched). */
  readonly sockets = new Set<Socket>();
  /** How each stream ended on the server: its RST_STREAM code. */
  readonly resets: number[] = [];
  readonly server: Http2Server = createServer();

  constructor() {
    this.server.on("connection", (socket: Socket) => {
      this.sockets.add(socket);
      socket.once("close", () => this.sockets.delete(socket));
    });
    this.server.on("session", (session) => {
      this.sessions.add(session);
      session.once("close", () => this.sessions.delete(session));
    });
    this.server.on("stream", (stream, headers) => {
      stream.once("close", () => this.resets.push(stream.rstCode));
      stream.on("error", () => {}); // a reset stream errors; the tests read rstCode
      const decoder = new FrameDecoder();
      const messages: Buffer[] = [];
      stream.on("data", (chunk: Buffer) => messages.push(...decoder.push(chunk)));
      stream.once("end", () => {
        const handler = this.handlers.get(String(headers[":path"]));
        if (handler) handler(stream, headers, messages.map((m) => m.toString()).join("|"));
        else trailersOnly(stream, { "grpc-status": String(Code.UNIMPLEMENTED), "grpc-message": "unknown method" });
      });
    });
  }

  async listen(path?: string): Promise<string> {
    if (path) {
      this.server.listen(path);
      await once(this.server, "listening");
      return `unix:${path}`;
    }
    this.server.listen(0, "127.0.0.1");
    await once(this.server, "listening");
    return `127.0.0.1:${(this.server.address() as AddressInfo).port}`;
  }

  close(): Promise<void> {
    for (const s of this.sessions) s.destroy();
    return new Promise((resolve) => this.server.close(() => resolve()));
  }
}

const GRPC = { ":status": 200, "content-type": "application/grpc" };

/** Headers, the messages as frames, then trailers. */
function respond(
  stream: ServerHttp2Stream,
  messages: string[],
  trailers: OutgoingHttpHeaders = { "grpc-status": "0" },
  headers = {},
): void {
  stream.respond({ ...GRPC, ...headers }, { waitForTrailers: true });
  stream.once("wantTrailers", () => stream.sendTrailers(trailers));
  for (const m of messages) stream.write(encodeFrame(Buffer.from(m)));
  stream.end();
}

/** Promise.withResolvers, which Node 20 lacks. */
function deferred<T>(): { promise: Promise<T>; resolve: (value: T) => void } {
  let resolve!: (value: T) => void;
  const promise = new Promise<T>((r) => (resolve = r));
  return { promise, resolve };
}

function trailersOnly(stream: ServerHttp2Stream, trailers: OutgoingHttpHeaders): void {
  stream.respond({ ...GRPC, ...trailers }, { endStream: true });
}

const decode = (bytes: Buffer) => bytes.toString();

function request(path: string, message = "hello", init: Partial<WireRequest> = {}): WireRequest {
  return {
    path,
    metadata: new Metadata(),
    message: Buffer.from(message),
    deadline: Number.POSITIVE_INFINITY,
    signal: new AbortController().signal,
    header: new Metadata(),
    trailer: new Metadata(),
    ...init,
  };
}

function unary(client: GrpcWireClient, req: WireRequest): Promise<string> {
  return new Promise((resolve, reject) => client.unary(req, decode, (error, message) => (error ? reject(error) : resolve(message!))));
}

async function rejection(promise: Promise<unknown>): Promise<GrpcError> {
  try {
    await promise;
  } catch (err) {
    assert.ok(err instanceof GrpcError, `not a GrpcError: ${err}`);
    return err;
  }
  assert.fail("the call succeeded");
}

async function collect(stream: AsyncIterable<string>): Promise<{ messages: string[]; error?: GrpcError }> {
  const messages: string[] = [];
  try {
    for await (const m of stream) messages.push(m);
  } catch (err) {
    assert.ok(err instanceof GrpcError, `not a GrpcError: ${err}`);
    return { messages, error: err };
  }
  return { messages };
}

describe("GrpcWireClient over TCP", () => {
  const scripted = new ScriptedServer();
  let client: GrpcWireClient;
  before(async () => {
    client = new GrpcWireClient(await scripted.listen());
  });
  after(async () => {
    client.close();
    await scripted.close();
  });
  beforeEach(() => scripted.handlers.clear());

  test("a unary call: request headers and framing; response headers, message and trailers", async () => {
    let seen: IncomingHttpHeaders = {};
    scripted.handlers.set("/pkg.Svc/Echo", (stream, headers, message) => {
      seen = headers;
      respond(
        stream,
        [`echo ${message}`],
        { "grpc-status": "0", "t-key": "t", "t-bin": Buffer.from([0, 1]).toString("base64") },
        { "h-key": "h" },
      );
    });
    const metadata = new Metadata();
    metadata.set("authorization", "Bearer x");
    metadata.set("blob-bin", Buffer.from([0xff, 0]));
    const req = request("/pkg.Svc/Echo", "hello", { metadata, deadline: Date.now() + 60_000 });
    assert.equal(await unary(client, req), "echo hello");
    assert.equal(seen[":method"], "POST");
    assert.equal(seen["content-type"], "application/grpc");
    assert.equal(seen.te, "trailers");
    assert.equal(seen.authorization, "Bearer x");
    assert.equal(seen["blob-bin"], Buffer.from([0xff, 0]).toString("base64"));
    assert.match(String(seen["grpc-timeout"]), /^(59\d{3}|60000)m$/);
    assert.deepEqual(req.header.get("h-key"), ["h"]);
    assert.deepEqual(req.trailer.get("t-key"), ["t"]);
    assert.deepEqual(req.trailer.get("t-bin"), [Buffer.from([0, 1])]);
    assert.deepEqual(req.trailer.get("grpc-status"), []);
  });

  test("no grpc-timeout without a deadline", async () => {
    let seen: IncomingHttpHeaders = {};
    scripted.handlers.set("/pkg.Svc/Echo", (stream, headers) => {
      seen = headers;
      respond(stream, ["ok"]);
    });
    await unary(client, request("/pkg.Svc/Echo"));
    assert.equal(seen["grpc-timeout"], undefined);
  });

  test("a trailers-only error: code, percent-decoded message, everything else in the trailer, the header empty", async () => {
    const details = Buffer.from("packed status").toString("base64");
    scripted.handlers.set("/pkg.Svc/Get", (stream) =>
      trailersOnly(stream, {
        "grpc-status": String(Code.NOT_FOUND),
        "grpc-message": "no such book: caf%C3%A9 100%25",
        "grpc-status-details-bin": details,
        "book-checksum": "none",
      }),
    );
    const req = request("/pkg.Svc/Get");
    const err = await rejection(unary(client, req));
    assert.equal(err.code, Code.NOT_FOUND);
    assert.equal(err.message, "no such book: café 100%");
    assert.equal(err.metadata, req.trailer);
    assert.deepEqual(req.trailer.get("book-checksum"), ["none"]);
    assert.deepEqual(req.trailer.get("grpc-status-details-bin"), [Buffer.from("packed status")]);
    assert.deepEqual(req.trailer.get("grpc-message"), []);
    assert.deepEqual(req.header.getMap(), {});
  });

  test("a grpc-message that is not valid percent-encoding is kept as sent", async () => {
    scripted.handlers.set("/pkg.Svc/Get", (stream) => trailersOnly(stream, { "grpc-status": "13", "grpc-message": "bad %E0%A4%A escape" }));
    const err = await rejection(unary(client, request("/pkg.Svc/Get")));
    assert.equal(err.code, Code.INTERNAL);
    assert.equal(err.message, "bad %E0%A4%A escape");
  });

  test("an error status after headers: header and trailer metadata both kept", async () => {
    scripted.handlers.set("/pkg.Svc/Get", (stream) =>
      respond(stream, [], { "grpc-status": "7", "grpc-message": "denied" }, { "h-key": "h" }),
    );
    const req = request("/pkg.Svc/Get");
    const err = await rejection(unary(client, req));
    assert.equal(err.code, Code.PERMISSION_DENIED);
    assert.equal(err.message, "denied");
    assert.deepEqual(req.header.get("h-key"), ["h"]);
  });

  test("a non-gRPC answer maps its HTTP status; OK with no message or two is UNIMPLEMENTED", async () => {
    scripted.handlers.set("/pkg.Svc/Http", (stream) => stream.respond({ ":status": 503 }, { endStream: true }));
    assert.equal((await rejection(unary(client, request("/pkg.Svc/Http")))).code, Code.UNAVAILABLE);
    scripted.handlers.set("/pkg.Svc/None", (stream) => respond(stream, []));
    assert.equal((await rejection(unary(client, request("/pkg.Svc/None")))).message, "No message received");
    scripted.handlers.set("/pkg.Svc/Two", (stream) => respond(stream, ["a", "b"]));
    const two = await rejection(unary(client, request("/pkg.Svc/Two")));
    assert.deepEqual([two.code, two.message], [Code.UNIMPLEMENTED, "Too many responses received"]);
  });

  test("a response message the decoder rejects is INTERNAL, and the stream is reset", async () => {
    scripted.handlers.set("/pkg.Svc/Echo", (stream) => respond(stream, ["not json"]));
    const failed = new Promise<GrpcError>((resolve) =>
      client.unary(
        request("/pkg.Svc/Echo"),
        (b) => JSON.parse(b.toString()),
        (error) => resolve(error!),
      ),
    );
    const err = await failed;
    assert.equal(err.code, Code.INTERNAL);
    assert.match(err.message, /^Response message parsing error: /);
  });

  test("a server stream: messages in order whatever the chunking, then the trailers", async () => {
    scripted.handlers.set("/pkg.Svc/Watch", (stream) => {
      stream.respond(GRPC, { waitForTrailers: true });
      stream.once("wantTrailers", () => stream.sendTrailers({ "grpc-status": "0", count: "3" }));
      const body = Buffer.concat(["one", "two", "three"].map((m) => encodeFrame(Buffer.from(m))));
      // Odd splits: a prefix cut in two, a frame and a half, the rest.
      for (const [from, to] of [
        [0, 2],
        [2, 12],
        [12, body.length],
      ]) {
        stream.write(body.subarray(from, to));
      }
      stream.end();
    });
    const req = request("/pkg.Svc/Watch");
    assert.deepEqual(await collect(client.serverStream(req, decode)), { messages: ["one", "two", "three"] });
    assert.deepEqual(req.trailer.get("count"), ["3"]);
  });

  test("a stream that fails after messages yields them, then throws the status", async () => {
    scripted.handlers.set("/pkg.Svc/Watch", (stream) => respond(stream, ["one"], { "grpc-status": "9", "grpc-message": "watch failed" }));
    const { messages, error } = await collect(client.serverStream(request("/pkg.Svc/Watch"), decode));
    assert.deepEqual(messages, ["one"]);
    assert.deepEqual([error?.code, error?.message], [Code.FAILED_PRECONDITION, "watch failed"]);
  });

  test("a stream the server ends mid-way without a status: the messages so far, then INTERNAL", async () => {
    scripted.handlers.set("/pkg.Svc/Watch", (stream) => {
      stream.respond(GRPC);
      stream.end(encodeFrame(Buffer.from("one")));
    });
    const { messages, error } = await collect(client.serverStream(request("/pkg.Svc/Watch"), decode));
    assert.deepEqual(messages, ["one"]);
    assert.deepEqual([error?.code, error?.message], [Code.INTERNAL, "Received RST_STREAM with code 0 (Call ended without gRPC status)"]);
  });

  test("a stream cut inside a message is INTERNAL, not a short message", async () => {
    scripted.handlers.set("/pkg.Svc/Watch", (stream) => {
      stream.respond(GRPC, { waitForTrailers: true });
      stream.once("wantTrailers", () => stream.sendTrailers({ "grpc-status": "0" }));
      stream.end(encodeFrame(Buffer.from("truncated")).subarray(0, 8));
    });
    const { error } = await collect(client.serverStream(request("/pkg.Svc/Watch"), decode));
    assert.deepEqual([error?.code, error?.message], [Code.INTERNAL, "the response ended inside a message"]);
  });

  test("a reset by the server maps its code: ENHANCE_YOUR_CALM is RESOURCE_EXHAUSTED, REFUSED_STREAM (sent again once) UNAVAILABLE", async () => {
    scripted.handlers.set("/pkg.Svc/Calm", (stream) => stream.close(constants.NGHTTP2_ENHANCE_YOUR_CALM));
    assert.equal((await rejection(unary(client, request("/pkg.Svc/Calm")))).code, Code.RESOURCE_EXHAUSTED);
    let refused = 0;
    scripted.handlers.set("/pkg.Svc/Refuse", (stream) => {
      refused++;
      stream.close(constants.NGHTTP2_REFUSED_STREAM);
    });
    assert.equal((await rejection(unary(client, request("/pkg.Svc/Refuse")))).code, Code.UNAVAILABLE);
    assert.equal(refused, 2);
  });

  test("a slow reader still gets every message of a long stream, in order", async () => {
    const sent = Array.from({ length: 200 }, (_, i) => `message ${i} ${"x".repeat(1000)}`);
    scripted.handlers.set("/pkg.Svc/Watch", (stream) => respond(stream, sent));
    const got: string[] = [];
    for await (const m of client.serverStream(request("/pkg.Svc/Watch"), decode)) {
      got.push(m);
      await new Promise((r) => setImmediate(r));
    }
    assert.deepEqual(got, sent);
  });

  test("aborting the signal cancels a call: CANCELLED here, RST_STREAM CANCEL at the server", async () => {
    const arrived = deferred<ServerHttp2Stream>();
    scripted.handlers.set("/pkg.Svc/Slow", (stream) => {
      stream.respond(GRPC);
      arrived.resolve(stream);
    });
    const controller = new AbortController();
    const call = unary(client, request("/pkg.Svc/Slow", "x", { signal: controller.signal }));
    const stream = await arrived.promise;
    controller.abort();
    const err = await rejection(call);
    assert.equal(err.code, Code.CANCELLED);
    if (!stream.closed) await once(stream, "close");
    assert.equal(stream.rstCode, constants.NGHTTP2_CANCEL);
  });

  test("a signal aborted before the call starts sends nothing", async () => {
    const before = scripted.resets.length;
    const controller = new AbortController();
    controller.abort();
    assert.equal((await rejection(unary(client, request("/pkg.Svc/Echo", "x", { signal: controller.signal })))).code, Code.CANCELLED);
    assert.equal(scripted.resets.length, before);
  });

  test("leaving a stream early cancels it at the server", async () => {
    const closed = deferred<number>();
    scripted.handlers.set("/pkg.Svc/Watch", (stream) => {
      stream.once("close", () => closed.resolve(stream.rstCode));
      stream.respond(GRPC);
      stream.write(encodeFrame(Buffer.from("first")));
    });
    for await (const m of client.serverStream(request("/pkg.Svc/Watch"), decode)) {
      assert.equal(m, "first");
      break;
    }
    assert.equal(await closed.promise, constants.NGHTTP2_CANCEL);
  });

  test("a deadline that passes is DEADLINE_EXCEEDED; one already past sends nothing", async () => {
    scripted.handlers.set("/pkg.Svc/Slow", (stream) => stream.respond(GRPC));
    const err = await rejection(unary(client, request("/pkg.Svc/Slow", "x", { deadline: Date.now() + 50 })));
    assert.deepEqual([err.code, err.message], [Code.DEADLINE_EXCEEDED, "Deadline exceeded"]);
    const before = scripted.resets.length;
    const past = await rejection(unary(client, request("/pkg.Svc/Slow", "x", { deadline: Date.now() - 1 })));
    assert.equal(past.code, Code.DEADLINE_EXCEEDED);
    assert.equal(scripted.resets.length, before);
  });

  test("after the session dies (server side), the next call opens a new one", async () => {
    scripted.handlers.set("/pkg.Svc/Echo", (stream, _h, message) => respond(stream, [message]));
    assert.equal(await unary(client, request("/pkg.Svc/Echo", "before")), "before");
    const [first] = scripted.sessions;
    assert.ok(first);
    const gone = once(first, "close");
    first.destroy();
    await gone;
    assert.equal(await unary(client, request("/pkg.Svc/Echo", "after")), "after");
    assert.equal(scripted.sessions.size, 1);
    assert.notEqual([...scripted.sessions][0], first);
  });

  test("a connection dropped mid-call is UNAVAILABLE", async () => {
    scripted.handlers.set("/pkg.Svc/Slow", (stream) => {
      stream.respond(GRPC);
      stream.write(encodeFrame(Buffer.from("one")), () => {
        for (const socket of scripted.sockets) socket.destroy();
      });
    });
    const { messages, error } = await collect(client.serverStream(request("/pkg.Svc/Slow"), decode));
    assert.deepEqual(messages, ["one"]);
    assert.equal(error?.code, Code.UNAVAILABLE);
  });
});

describe("GrpcWireClient connection failures", () => {
  test("nothing listening is UNAVAILABLE, for unary and streaming calls", async () => {
    const scripted = new ScriptedServer();
    const target = await scripted.listen();
    await scripted.close();
    const client = new GrpcWireClient(target);
    try {
      const err = await rejection(unary(client, request("/pkg.Svc/Echo")));
      assert.equal(err.code, Code.UNAVAILABLE);
      assert.match(err.message, /ECONNREFUSED/);
      const { error } = await collect(client.serverStream(request("/pkg.Svc/Watch"), decode));
      assert.equal(error?.code, Code.UNAVAILABLE);
    } finally {
      client.close();
    }
  });

  test("a closed client refuses new calls with UNAVAILABLE", async () => {
    const client = new GrpcWireClient("127.0.0.1:1");
    client.close();
    const err = await rejection(unary(client, request("/pkg.Svc/Echo")));
    assert.equal(err.code, Code.UNAVAILABLE);
  });
});

describe("GrpcWireClient over a Unix socket", () => {
  test("unix:<path> dials the socket", async () => {
    const dir = mkdtempSync(join(tmpdir(), "wire-client-"));
    const scripted = new ScriptedServer();
    const client = new GrpcWireClient(await scripted.listen(join(dir, "grpc.sock")));
    try {
      scripted.handlers.set("/pkg.Svc/Echo", (stream, _h, message) => respond(stream, [`unix ${message}`]));
      assert.equal(await unary(client, request("/pkg.Svc/Echo")), "unix hello");
    } finally {
      client.close();
      await scripted.close();
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

/**
 * Client-streaming and bidi calls against a bare grpc-js server: its handlers see exactly what a
 * grpc-js client would send them (messages, half-close, cancellation).
 */
describe("GrpcWireClient streaming requests, against a grpc-js server", () => {
  const bytes = { serialize: (b: Buffer) => b, deserialize: (b: Buffer) => b };
  const method = (path: string, requestStream: boolean, responseStream: boolean) => ({
    path,
    requestStream,
    responseStream,
    requestSerialize: bytes.serialize,
    requestDeserialize: bytes.deserialize,
    responseSerialize: bytes.serialize,
    responseDeserialize: bytes.deserialize,
  });
  /** What the server's handlers saw. */
  const seen = { sum: [] as string[], cancelled: deferred<string[]>(), chat: [] as string[] };
  let server: grpc.Server;
  let client: GrpcWireClient;

  before(async () => {
    server = new grpc.Server();
    server.addService(
      {
        Sum: method("/pkg.Svc/Sum", true, false),
        Chat: method("/pkg.Svc/Chat", true, true),
        First: method("/pkg.Svc/First", true, false),
        Hold: method("/pkg.Svc/Hold", true, false),
      },
      {
        // Joins every request, answers at the half-close, with header and trailer metadata.
        Sum(call: grpc.ServerReadableStream<Buffer, Buffer>, callback: grpc.sendUnaryData<Buffer>) {
          const parts: string[] = [];
          call.on("data", (m: Buffer) => parts.push(m.toString()));
          call.on("end", () => {
            seen.sum = parts;
            call.sendMetadata(new grpc.Metadata());
            const trailer = new grpc.Metadata();
            trailer.set("sum-count", String(parts.length));
            callback(null, Buffer.from(parts.join("+")), trailer);
          });
        },
        // One reply per request, written as soon as it is read.
        Chat(call: grpc.ServerDuplexStream<Buffer, Buffer>) {
          call.on("data", (m: Buffer) => {
            seen.chat.push(m.toString());
            call.write(Buffer.from(`re: ${m}`));
          });
          call.on("end", () => call.end());
        },
        // Answers after the first request, before the client has finished (early response).
        First(call: grpc.ServerReadableStream<Buffer, Buffer>, callback: grpc.sendUnaryData<Buffer>) {
          call.once("data", (m: Buffer) => callback(null, Buffer.from(`first: ${m}`)));
        },
        // Never answers; records what it got when cancelled.
        Hold(call: grpc.ServerReadableStream<Buffer, Buffer>) {
          const parts: string[] = [];
          call.on("data", (m: Buffer) => parts.push(m.toString()));
          call.on("cancelled", () => seen.cancelled.resolve(parts));
        },
      },
    );
    const port = await new Promise<number>((resolve, reject) =>
      server.bindAsync("127.0.0.1:0", grpc.ServerCredentials.createInsecure(), (err, p) => (err ? reject(err) : resolve(p))),
    );
    client = new GrpcWireClient(`127.0.0.1:${port}`);
  });
  after(() => {
    client.close();
    server.forceShutdown();
  });

  /** Requests from a list; records whether the client stopped reading them early. */
  function source(messages: string[]) {
    const state = { read: 0, returned: false };
    const iterator: AsyncIterator<Uint8Array> = {
      async next() {
        if (state.read === messages.length) return { done: true, value: undefined };
        return { done: false, value: Buffer.from(messages[state.read++]!) };
      },
      async return() {
        state.returned = true;
        return { done: true, value: undefined };
      },
    };
    return { iterator, state };
  }

  test("client-streaming: every request reaches the handler, the half-close lets it answer; header and trailer kept", async () => {
    const { iterator } = source(["1", "2", "3"]);
    const req = request("/pkg.Svc/Sum", "", { message: undefined, messages: iterator });
    assert.equal(await unary(client, req), "1+2+3");
    assert.deepEqual(seen.sum, ["1", "2", "3"]);
    assert.deepEqual(req.trailer.get("sum-count"), ["3"]);
  });

  test("client-streaming with no request at all: the half-close alone, and the handler answers", async () => {
    const { iterator } = source([]);
    assert.equal(await unary(client, request("/pkg.Svc/Sum", "", { message: undefined, messages: iterator })), "");
  });

  test("bidi: each reply arrives before the next request is even produced", async () => {
    const replies: string[] = [];
    let replied = deferred<void>();
    const requests = (async function* () {
      for (const text of ["a", "b", "c"]) {
        yield Buffer.from(text);
        await replied.promise; // the next request only once the reply to this one is in
        replied = deferred<void>();
      }
    })();
    for await (const reply of client.serverStream(request("/pkg.Svc/Chat", "", { message: undefined, messages: requests }), decode)) {
      replies.push(reply);
      replied.resolve();
    }
    assert.deepEqual(replies, ["re: a", "re: b", "re: c"]);
  });

  test("an early answer ends the call while the next request is still to come, and stops the requests being read", async () => {
    const returned = deferred<void>();
    const never = new Promise<never>(() => {});
    let read = 0;
    const requests: AsyncIterator<Uint8Array> = {
      async next() {
        if (read === 1) return never; // the second request never comes: the answer must not wait for it
        read++;
        return { done: false, value: Buffer.from(`m${read}`) };
      },
      async return() {
        returned.resolve();
        return { done: true, value: undefined };
      },
    };
    const answer = await unary(client, request("/pkg.Svc/First", "", { message: undefined, messages: requests }));
    assert.equal(answer, "first: m1");
    await returned.promise; // the gateway stops reading the HTTP body here
  });

  test("requests that fail end the call with that very error, and the server sees a cancel", async () => {
    seen.cancelled = deferred<string[]>();
    const bad = new GrpcError(Code.INVALID_ARGUMENT, "request message 2: malformed JSON");
    const requests = (async function* () {
      yield Buffer.from("ok");
      throw bad;
    })();
    const err = await rejection(unary(client, request("/pkg.Svc/Hold", "", { message: undefined, messages: requests })));
    assert.equal(err, bad);
    assert.deepEqual(await seen.cancelled.promise, ["ok"]);
  });
});
