/**
 * Client-streaming and bidi calls over gRPC, from a grpc-js client: early answers, the response header
 * before the first message, trailers set late, the deadline and a client's cancel reaching the handler.
 */
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { create, type Message } from "@bufbuild/protobuf";
import type { ClientDuplexStream, ClientWritableStream, Metadata, ServiceError } from "@grpc/grpc-js";
import { type CallContext, Code, defineService } from "../../src/framework/index.js";
import { metadataOf, type RawClient, rawClient, reader, statusOfCall } from "../../src/framework/testing/grpc-streams.js";
import { startTestServer, type TestServer } from "../../src/framework/testing/harness.js";
import { StreamingInputCallRequestSchema, StreamingOutputCallRequestSchema } from "../gen/grpcsvc_test/interop/messages_pb.js";
import { TestService } from "../gen/grpcsvc_test/interop/test_pb.js";

/** Resolves with the value the server-side code hands it: how a test learns what happened inside a handler. */
function signal<T>() {
  let resolve!: (value: T) => void;
  const promise = new Promise<T>((r) => {
    resolve = r;
  });
  return { promise, resolve };
}

/** Calls `fn` with the abort reason once the call's signal aborts (at once if it already has). */
function onAbort(ctx: CallContext, fn: (reason: unknown) => void): void {
  if (ctx.signal.aborted) fn(ctx.signal.reason);
  else ctx.signal.addEventListener("abort", () => fn(ctx.signal.reason), { once: true });
}

describe("streams over gRPC (grpc-js client)", () => {
  let server: TestServer;
  let client: RawClient<typeof TestService>;
  const aborted = { deadline: signal<unknown>() };
  let readAfterAnswer = -1;
  /** How a Sum-style handler's input ended: the total it committed, or the error its read failed with; and its signal then. */
  type Outcome = { committed?: number; readError?: { code?: number }; signalAborted: boolean };
  const watch = () => ({ read2: signal<void>(), outcome: signal<Outcome>() });
  const cancelled = { client: watch(), bidi: watch(), halfClosed: watch() };

  /** Counts the client's messages and commits the total only once the input has ended (a Sum). */
  async function* sumOf(requests: AsyncIterable<unknown>, ctx: CallContext, seen: ReturnType<typeof watch>) {
    let n = 0;
    try {
      for await (const _ of requests) {
        if (++n === 2) seen.read2.resolve();
        yield n;
      }
    } catch (err) {
      seen.outcome.resolve({ readError: err as { code?: number }, signalAborted: ctx.signal.aborted });
      throw err;
    }
    seen.outcome.resolve({ committed: n, signalAborted: ctx.signal.aborted });
  }

  const service = defineService(TestService, {
    handlers: {
      // Answers after the first message, without waiting for the client to finish.
      async streamingInputCall(requests, ctx: CallContext) {
        if (ctx.metadata.get("x-mode")[0] === "cancel") {
          let total = 0;
          for await (const n of sumOf(requests, ctx, cancelled.client)) total = n;
          return { aggregatedPayloadSize: total };
        }
        for await (const request of requests) {
          readAfterAnswer = 0;
          return { aggregatedPayloadSize: request.payload?.body.length ?? 0 };
        }
        return { aggregatedPayloadSize: 0 };
      },

      async *fullDuplexCall(requests, ctx: CallContext) {
        const mode = ctx.metadata.get("x-mode")[0];
        if (mode === "deadline") {
          onAbort(ctx, aborted.deadline.resolve);
          try {
            for await (const _ of requests);
          } catch {
            // the deadline
          }
          return;
        }
        if (mode === "cancel" || mode === "half-close") {
          for await (const _ of sumOf(requests, ctx, mode === "cancel" ? cancelled.bidi : cancelled.halfClosed)) {
            yield { payload: { body: new Uint8Array(1) } };
          }
          return;
        }
        // The header goes out before any request is read or any response written.
        ctx.responseHeader.set("x-early", "yes");
        ctx.sendHeader();
        let n = 0;
        for await (const request of requests) {
          n++;
          yield { payload: { body: new Uint8Array(request.responseParameters[0]?.size ?? 0) } };
        }
        // Set after the last message: trailers can change until the call ends.
        ctx.responseTrailer.set("x-count", String(n));
      },
    },
  });

  before(async () => {
    server = await startTestServer([service]);
    client = rawClient(TestService, server.grpcAddress);
  });
  after(async () => {
    client.close();
    await server.close();
  });

  test("a client-streaming handler may answer before the client half-closes; the rest of the input is discarded", async () => {
    const answer = new Promise<{ aggregatedPayloadSize: number }>((resolve, reject) => {
      const call = client.streamingInputCall(((err: ServiceError | null, res: { aggregatedPayloadSize: number }) =>
        err ? reject(err) : resolve(res)) as never) as ClientWritableStream<Message>;
      call.write(create(StreamingInputCallRequestSchema, { payload: { body: new Uint8Array(7) } }));
      // No end(): the answer must come while the client could still send.
    });
    assert.equal((await answer).aggregatedPayloadSize, 7);
    assert.equal(readAfterAnswer, 0);
  });

  test("ctx.sendHeader() sends the response header before the first message, and a trailer set after the last one arrives", async () => {
    const call = client.fullDuplexCall(metadataOf({})) as ClientDuplexStream<Message, Message>;
    const status = statusOfCall(call);
    // Nothing written yet: the header can only come from sendHeader().
    const header = await new Promise<Metadata>((resolve) => call.once("metadata", resolve));
    assert.deepEqual(header.get("x-early"), ["yes"]);
    const read = reader(call);
    call.write(create(StreamingOutputCallRequestSchema, { responseParameters: [{ size: 3 }] }));
    assert.ok(await read());
    call.write(create(StreamingOutputCallRequestSchema, { responseParameters: [{ size: 3 }] }));
    assert.ok(await read());
    call.end();
    assert.equal(await read(), null);
    const s = await status;
    assert.equal(s.code, Code.OK);
    assert.deepEqual(s.metadata.get("x-count"), ["2"]);
  });

  test("a deadline covers the whole bidi call: the handler's signal aborts and the client gets DEADLINE_EXCEEDED", async () => {
    const call = client.fullDuplexCall(metadataOf({ "x-mode": "deadline" }), { deadline: Date.now() + 300 }) as ClientDuplexStream<
      Message,
      Message
    >;
    const status = statusOfCall(call);
    call.write(create(StreamingOutputCallRequestSchema));
    assert.equal((await status).code, Code.DEADLINE_EXCEEDED);
    // Aborted by the timeout, by grpc-js's own end of the call or by the end of input past the deadline: whichever comes first.
    await aborted.deadline.promise;
  });

  /** Resolves once the server has logged the call's response-time line with `code` (written just after the handler ends). */
  async function callLine(method: string, code: string): Promise<Record<string, unknown>> {
    for (;;) {
      const line = server.logs.find((l) => l.msg === "response time" && l.grpcCode === code && JSON.stringify(l).includes(method));
      if (line) return line;
      await new Promise((resolve) => setImmediate(resolve));
    }
  }

  test("a client that cancels a client stream mid-way aborts the handler's signal and fails its next read with CANCELLED; nothing partial is committed", async () => {
    const seen = cancelled.client;
    const call = client.streamingInputCall(metadataOf({ "x-mode": "cancel" }), (() => {}) as never) as ClientWritableStream<Message>;
    const status = statusOfCall(call);
    call.write(create(StreamingInputCallRequestSchema, { payload: { body: new Uint8Array(1) } }));
    call.write(create(StreamingInputCallRequestSchema, { payload: { body: new Uint8Array(1) } }));
    await seen.read2.promise;
    call.cancel();
    assert.equal((await status).code, Code.CANCELLED);
    const outcome = await seen.outcome.promise;
    assert.equal(outcome.committed, undefined, "the partial count was taken for the whole input");
    assert.equal(outcome.readError?.code, Code.CANCELLED);
    assert.ok(outcome.signalAborted);
    const line = await callLine("StreamingInputCall", "Canceled");
    assert.equal(line.msgs_received, 2);
  });

  test("a client that cancels a bidi stream mid-way aborts the handler's signal and fails its next read with CANCELLED", async () => {
    const seen = cancelled.bidi;
    const call = client.fullDuplexCall(metadataOf({ "x-mode": "cancel" })) as ClientDuplexStream<Message, Message>;
    const status = statusOfCall(call);
    const read = reader(call);
    call.write(create(StreamingOutputCallRequestSchema));
    assert.ok(await read());
    call.write(create(StreamingOutputCallRequestSchema));
    assert.ok(await read());
    await seen.read2.promise;
    call.cancel();
    assert.equal((await status).code, Code.CANCELLED);
    const outcome = await seen.outcome.promise;
    assert.equal(outcome.committed, undefined, "the end of input was taken for a half-close");
    assert.equal(outcome.readError?.code, Code.CANCELLED);
    assert.ok(outcome.signalAborted);
    await callLine("FullDuplexCall", "Canceled");
  });

  test("after a cancelled stream the server keeps serving, and a half-close still ends the input normally", async () => {
    const call = client.fullDuplexCall(metadataOf({ "x-mode": "half-close" })) as ClientDuplexStream<Message, Message>;
    const status = statusOfCall(call);
    const read = reader(call);
    call.write(create(StreamingOutputCallRequestSchema));
    assert.ok(await read());
    call.end();
    assert.equal(await read(), null);
    assert.equal((await status).code, Code.OK);
    assert.deepEqual(await cancelled.halfClosed.outcome.promise, { committed: 1, signalAborted: false });
  });
});
