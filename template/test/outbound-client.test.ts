import assert from "node:assert/strict";
import { test } from "node:test";
import { Code, createClient, defineService, GrpcError } from "../src/framework/index.js";
import { startTestServer } from "../src/framework/testing/harness.js";
import { ExampleService } from "../src/gen/example/v1/example_pb.js";

test("the outbound client forwards trace ID and debug switch, caps the deadline, and retries UNAVAILABLE", async (t) => {
  const seen: { traceId: string; debug: boolean; deadline: number }[] = [];
  let failuresLeft = 2;
  const downstream = await startTestServer([
    defineService(ExampleService, {
      handlers: {
        echo(request, ctx) {
          seen.push({ traceId: ctx.traceId, debug: ctx.debug, deadline: ctx.deadline });
          if (request.message === "flaky" && failuresLeft-- > 0) throw new GrpcError(Code.UNAVAILABLE, "try again");
          return { message: `downstream:${request.message}`, traceId: ctx.traceId };
        },
        async *countdown() {},
        fail: () => ({}),
      },
    }),
  ]);
  t.after(() => downstream.close());
  const next = createClient(ExampleService, downstream.grpcAddress);
  t.after(() => next.close());

  const upstream = await startTestServer([
    defineService(ExampleService, {
      handlers: {
        async echo(request) {
          return next.echo({ message: request.message });
        },
        async *countdown() {},
        fail: () => ({}),
      },
    }),
  ]);
  t.after(() => upstream.close());
  const client = upstream.client(ExampleService);

  const deadline = Date.now() + 5000;
  const res = await client.echo({ message: "hop", debug: true }, { metadata: { "x-trace-id": "hop-trace" }, deadline });
  assert.equal(res.message, "downstream:hop");
  assert.equal(res.traceId, "hop-trace");
  assert.equal(seen[0]?.traceId, "hop-trace");
  assert.equal(seen[0]?.debug, true);
  assert.ok(seen[0]!.deadline <= deadline + 50 && seen[0]!.deadline > Date.now(), "the downstream deadline is the caller's, not 60 s");

  seen.length = 0;
  assert.equal((await client.echo({ message: "flaky" })).message, "downstream:flaky");
  assert.equal(seen.length, 3, "two UNAVAILABLE attempts, then success");
});
