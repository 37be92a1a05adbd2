import assert from "node:assert/strict";
import { once } from "node:events";
import { after, describe, test } from "node:test";
import { setTimeout as sleep } from "node:timers/promises";
import { create } from "@bufbuild/protobuf";
import { FixtureService } from "../../../test/gen/fixture/v1/fixture_pb.js";
import { BadRequestSchema } from "../../gen/google/rpc/error_details_pb.js";
import type { CallContext } from "../call/context.js";
import type { ServiceHandlers } from "../call/handlers.js";
import { Code, GrpcError } from "../call/status.js";
import { type Client, createClient } from "../client/client.js";
import { defineService } from "../lifecycle/service.js";
import { createFakeClient } from "./fake-client.js";
import { startTestServer } from "./harness.js";

/** What a caller can observe of a call's outcome: its answer, or its error's code, details, message and status details. */
async function outcome(call: Promise<unknown>) {
  try {
    return { ok: await call };
  } catch (e) {
    const err = e as { code: number; details: string; message: string; metadata: { get(k: string): unknown[] } };
    return {
      code: err.code,
      details: err.details,
      message: err.message,
      statusDetails: err.metadata.get("grpc-status-details-bin").length,
    };
  }
}

const handlers: ServiceHandlers<typeof FixtureService> = {
  echo(request, ctx) {
    if (request.message === "missing") {
      throw new GrpcError(Code.NOT_FOUND, "no such thing", {
        details: [create(BadRequestSchema, { fieldViolations: [{ field: "message" }] })],
      });
    }
    if (request.message === "bug") throw new Error("a bug");
    return { message: `${request.message} (${request.delayMs})`, traceId: ctx.traceId };
  },
};

describe("createFakeClient: a dependency's handlers served in memory behind createClient's client type", () => {
  const servers: { close(): Promise<void> }[] = [];
  after(() => Promise.all(servers.map((s) => s.close())));

  test("answers and errors are what a real server of the same handlers gives: a caller cannot tell", async () => {
    const server = await startTestServer([defineService(FixtureService, { handlers })]);
    servers.push(server);
    const real = createClient(FixtureService, server.grpcAddress, { retry: false, breaker: false });
    const fake: Client<typeof FixtureService> = createFakeClient(FixtureService, handlers);
    after(() => {
      real.close();
      fake.close();
    });
    const trace = { metadata: { "x-trace-id": "t-1" } };
    // An answer, a GrpcError with typed details, a bug (a plain Error), a request its buf.validate rules refuse.
    for (const request of [{ message: "hi" }, { message: "hi", delayMs: 7 }, { message: "missing" }, { message: "bug" }, { message: "" }]) {
      assert.deepEqual(await outcome(fake.echo(request, trace)), await outcome(real.echo(request, trace)), JSON.stringify(request));
    }
    assert.equal((await outcome(fake.echo({ message: "" }))).code, Code.INVALID_ARGUMENT);
    // A method given no handler.
    const unimplemented = await outcome(fake.fail({}));
    assert.equal(unimplemented.code, Code.UNIMPLEMENTED);
    assert.deepEqual(unimplemented, await outcome(real.fail({})));
  });

  test("delays and deadlines: a handler slower than the caller's deadline ends DEADLINE_EXCEEDED, its signal aborted", async () => {
    let handlerCtx: CallContext | undefined;
    const fake = createFakeClient(FixtureService, {
      async echo(request, ctx) {
        handlerCtx = ctx;
        await sleep(request.delayMs, undefined, { signal: ctx.signal });
        return { message: request.message };
      },
    });
    after(() => fake.close());
    assert.equal((await fake.echo({ message: "quick", delayMs: 5 })).message, "quick");
    const slow = await outcome(fake.echo({ message: "slow", delayMs: 10_000 }, { deadline: Date.now() + 30 }));
    assert.equal(slow.code, Code.DEADLINE_EXCEEDED);
    assert.equal(handlerCtx?.signal.aborted, true);
  });

  test("every method kind: a stream's early break cancels the handler; client and bidi streams read as sent", async () => {
    let stopped!: Promise<unknown>;
    const fake = createFakeClient(FixtureService, {
      async *countdown(request, ctx) {
        stopped = once(ctx.signal, "abort");
        for (let remaining = request.from; remaining >= 1; remaining--) yield { remaining };
      },
      async sum(requests) {
        let sum = 0n;
        let count = 0;
        for await (const r of requests) {
          sum += r.value;
          count++;
        }
        return { sum, count };
      },
      async *chat(requests) {
        let seq = 0;
        for await (const r of requests) yield { text: r.text.toUpperCase(), seq: ++seq };
      },
    });
    after(() => fake.close());

    const seen: number[] = [];
    for await (const m of fake.countdown({ from: 1000 })) {
      seen.push(m.remaining);
      if (seen.length === 3) break;
    }
    assert.deepEqual(seen, [1000, 999, 998]);
    await stopped; // the handler learns the caller left (else the test times out)

    async function* values() {
      for (const value of [1n, 2n, 3n]) yield { value };
    }
    const total = await fake.sum(values());
    assert.deepEqual([total.sum, total.count], [6n, 3]);

    async function* texts() {
      yield { text: "a" };
      yield { text: "b" };
    }
    const replies: string[] = [];
    for await (const r of fake.chat(texts())) replies.push(`${r.seq}:${r.text}`);
    assert.deepEqual(replies, ["1:A", "2:B"]);
  });

  test("injected failures reach the caller's breaker when it is turned on, as from a real dependency", async () => {
    let calls = 0;
    const fake = createFakeClient(
      FixtureService,
      {
        echo() {
          calls++;
          throw new GrpcError(Code.UNAVAILABLE, "down");
        },
      },
      { breaker: {} },
    );
    after(() => fake.close());
    const codes = new Set<string | undefined>();
    for (let i = 0; i < 200; i++) codes.add((await outcome(fake.echo({ message: "x" }))).details);
    assert.deepEqual([...codes].sort(), [
      "down",
      "fixture.v1.FixtureService/Echo not called: fake:///fixture.v1.FixtureService has been failing, and the client's breaker rejects calls to it locally for now",
    ]);
    assert.ok(calls < 100, `${calls} of 200 calls reached the fake`);
  });
});
