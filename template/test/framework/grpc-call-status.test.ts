/**
 * Every gRPC call gets exactly one status, also when it was aborted while the client is still there:
 * a handler that calls ctx.abort() and then returns (or throws), or an interceptor that aborts the call
 * and fails it. Only a client that went away gets no answer (nobody is left to read it). Driven by a
 * grpc-js client; each call has a 10 s deadline only so that a call left unanswered fails the test
 * (DEADLINE_EXCEEDED) instead of hanging it.
 */
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { create, type Message } from "@bufbuild/protobuf";
import type { ClientDuplexStream, ClientReadableStream, ClientWritableStream, ServiceError } from "@grpc/grpc-js";
import { Code, defineService, GrpcError } from "../../src/framework/index.js";
import { metadataOf, type RawClient, rawClient, statusOfCall } from "../../src/framework/testing/grpc-streams.js";
import { startTestServer, type TestServer } from "../../src/framework/testing/harness.js";
import {
  ChatRequestSchema,
  CountdownRequestSchema,
  EchoRequestSchema,
  FixtureService,
  SumRequestSchema,
} from "../gen/fixture/v1/fixture_pb.js";

const stopped = () => new GrpcError(Code.ABORTED, "stopped");

const service = defineService(FixtureService, {
  handlers: {
    async echo(request, ctx) {
      ctx.abort(stopped());
      return { message: request.message };
    },
    async sum(requests, ctx) {
      let count = 0;
      for await (const _ of requests) count++;
      ctx.abort(stopped());
      return { sum: BigInt(count), count };
    },
    async *countdown(request, ctx) {
      yield { remaining: request.from };
      ctx.abort(stopped());
      yield { remaining: request.from - 1 };
    },
    async *chat(requests, ctx) {
      for await (const request of requests) {
        ctx.abort(stopped());
        if (request.text === "hi") throw new GrpcError(Code.FAILED_PRECONDITION, `refused ${request.text}`);
        yield { text: request.text };
      }
    },
  },
  preStart(app) {
    // With x-abort-in-interceptor, aborts the call and fails it before the handler runs.
    app.prepend({
      name: "aborts",
      interceptor: (next) => (call) => {
        if (call.ctx.metadata.get("x-abort-in-interceptor").length === 0) return next(call);
        const err = new GrpcError(Code.PERMISSION_DENIED, "aborted by an interceptor");
        call.ctx.abort(err);
        throw err;
      },
    });
  },
});

describe("a gRPC call aborted while its client is still there still gets its one status", () => {
  let server: TestServer;
  let client: RawClient<typeof FixtureService>;
  const deadline = () => ({ deadline: Date.now() + 10_000 });
  before(async () => {
    server = await startTestServer([service]);
    client = rawClient(FixtureService, server.grpcAddress);
  });
  after(async () => {
    client.close();
    await server.close();
  });

  const sum = (metadata = metadataOf({})) =>
    new Promise<{ err: ServiceError | null; res: { count?: number } | undefined }>((resolve) => {
      const call = client.sum(metadata, deadline(), (err: ServiceError | null, res: { count: number }) =>
        resolve({ err, res }),
      ) as ClientWritableStream<Message>;
      call.write(create(SumRequestSchema, { value: 1n }));
      call.write(create(SumRequestSchema, { value: 2n }));
      call.end();
    });

  test("unary: the handler aborts, then answers: the client gets the answer", async () => {
    const res = await new Promise<{ message: string }>((resolve, reject) =>
      client.echo(
        create(EchoRequestSchema, { message: "hi" }),
        metadataOf({}),
        deadline(),
        (err: ServiceError | null, r: { message: string }) => (err ? reject(err) : resolve(r)),
      ),
    );
    assert.equal(res.message, "hi");
  });

  test("client-streaming: the handler aborts, then answers: the client gets the answer", async () => {
    const { err, res } = await sum();
    assert.equal(err, null);
    assert.equal(res?.count, 2);
  });

  test("server-streaming: the handler aborts between messages and ends: every message, then OK", async () => {
    const call = client.countdown(create(CountdownRequestSchema, { from: 5 }), metadataOf({}), deadline()) as ClientReadableStream<Message>;
    const status = statusOfCall(call);
    const seen: number[] = [];
    call.on("data", (m: { remaining: number }) => seen.push(m.remaining));
    assert.equal((await status).code, Code.OK);
    assert.deepEqual(seen, [5, 4]);
  });

  test("bidi: the handler aborts, then throws: the client gets that error", async () => {
    const call = client.chat(metadataOf({}), deadline()) as ClientDuplexStream<Message, Message>;
    const status = statusOfCall(call);
    call.on("data", () => {});
    call.write(create(ChatRequestSchema, { text: "hi" }));
    const s = await status;
    assert.equal(s.code, Code.FAILED_PRECONDITION);
    assert.equal(s.details, "refused hi");
  });

  test("client-streaming and bidi: an interceptor aborts the call and fails it: the client gets that error", async () => {
    const { err } = await sum(metadataOf({ "x-abort-in-interceptor": "1" }));
    assert.equal(err?.code, Code.PERMISSION_DENIED);
    const call = client.chat(metadataOf({ "x-abort-in-interceptor": "1" }), deadline()) as ClientDuplexStream<Message, Message>;
    const status = statusOfCall(call);
    call.on("data", () => {});
    assert.equal((await status).code, Code.PERMISSION_DENIED);
  });

  test("each call the handler saw left one response-time line with the code its client got", async () => {
    // (The prepended interceptor sits outside the response-time step: the calls it failed have no line.)
    const lines = server.logs.filter((l) => l.msg === "response time").map((l) => `${l.grpcMethod} ${l.grpcCode}`);
    assert.deepEqual(lines, [
      "/fixture.v1.FixtureService/Echo OK",
      "/fixture.v1.FixtureService/Sum OK",
      "/fixture.v1.FixtureService/Countdown OK",
      "/fixture.v1.FixtureService/Chat FailedPrecondition",
    ]);
  });
});
