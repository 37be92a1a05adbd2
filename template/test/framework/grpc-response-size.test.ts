/**
 * A response larger than GRPC_MAX_SEND_MSG_SIZE fails RESOURCE_EXHAUSTED, and the metrics and the
 * response-time line count the code the client received, not OK. Driven by a grpc-js client, with
 * the limit set to 4 bytes; a response within it still arrives intact.
 */
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { create, type Message } from "@bufbuild/protobuf";
import type { ClientDuplexStream, ClientReadableStream, ServiceError } from "@grpc/grpc-js";
import { Code, defineService } from "../../src/framework/index.js";
import { metadataOf, type RawClient, rawClient, statusOfCall } from "../../src/framework/testing/grpc-streams.js";
import { startTestServer, type TestServer } from "../../src/framework/testing/harness.js";
import { ChatRequestSchema, CountdownRequestSchema, EchoRequestSchema, FixtureService } from "../gen/fixture/v1/fixture_pb.js";
import { handled } from "./support/metrics.js";

/** Encodes to more than 4 bytes. */
const LONG = "hello";

const service = defineService(FixtureService, {
  handlers: {
    echo: (request) => ({ message: request.message }),
    // 2 bytes, then 6: a server stream that reads nothing more from its client.
    async *countdown() {
      yield { remaining: 1 };
      yield { remaining: 4_000_000_000 };
      yield { remaining: 2 };
    },
    async *chat(requests) {
      for await (const request of requests) yield { text: request.text };
    },
  },
});

async function responseLine(server: TestServer, method: string): Promise<Record<string, unknown>> {
  for (;;) {
    const line = server.logs.find((l) => l.msg === "response time" && l.grpcMethod === `/fixture.v1.FixtureService/${method}`);
    if (line) return line;
    await new Promise((r) => setImmediate(r));
  }
}

describe("a response larger than GRPC_MAX_SEND_MSG_SIZE", () => {
  let server: TestServer;
  let client: RawClient<typeof FixtureService>;
  before(async () => {
    server = await startTestServer([service], { GRPC_MAX_SEND_MSG_SIZE: "4" });
    client = rawClient(FixtureService, server.grpcAddress);
  });
  after(async () => {
    client.close();
    await server.close();
  });

  const echo = (message: string) =>
    new Promise<{ err: ServiceError | null; res?: { message: string } }>((resolve) =>
      client.echo(create(EchoRequestSchema, { message }), (err: ServiceError | null, res: { message: string }) => resolve({ err, res })),
    );

  test("unary: the client gets RESOURCE_EXHAUSTED, counted and logged as such; a small answer is intact", async () => {
    const small = await echo("hi");
    assert.equal(small.err, null);
    assert.equal(small.res?.message, "hi");
    const { err } = await echo(LONG);
    assert.equal(err?.code, Code.RESOURCE_EXHAUSTED);
    const lines = server.logs.filter((l) => l.msg === "response time" && l.grpcMethod === "/fixture.v1.FixtureService/Echo");
    assert.deepEqual(
      lines.map((l) => l.grpcCode),
      ["OK", "ResourceExhausted"],
    );
    assert.equal(await handled(server, "Echo", "ResourceExhausted"), 1);
    assert.equal(await handled(server, "Echo", "OK"), 1);
  });

  test("server-streaming: the message within the limit arrives, the one over it ends the call RESOURCE_EXHAUSTED, counted and logged", async () => {
    const call = client.countdown(create(CountdownRequestSchema, { from: 1 }), metadataOf({})) as ClientReadableStream<Message>;
    const status = statusOfCall(call);
    const seen: number[] = [];
    call.on("data", (m: { remaining: number }) => seen.push(m.remaining));
    assert.equal((await status).code, Code.RESOURCE_EXHAUSTED);
    assert.deepEqual(seen, [1]);
    const line = await responseLine(server, "Countdown");
    assert.equal(line.grpcCode, "ResourceExhausted");
    assert.equal(line.msgs_sent, 2, "the oversized message was produced, not delivered");
    assert.equal(await handled(server, "Countdown", "ResourceExhausted"), 1);
    assert.equal(await handled(server, "Countdown", "OK"), 0);
  });

  test("bidi: the message within the limit arrives, the one over it ends the call RESOURCE_EXHAUSTED, counted and logged", async () => {
    const call = client.chat(metadataOf({})) as ClientDuplexStream<Message, Message>;
    const status = statusOfCall(call);
    const seen: string[] = [];
    call.on("data", (m: { text: string }) => seen.push(m.text));
    call.write(create(ChatRequestSchema, { text: "hi" }));
    call.write(create(ChatRequestSchema, { text: LONG }));
    call.write(create(ChatRequestSchema, { text: "after" }));
    call.end();
    assert.equal((await status).code, Code.RESOURCE_EXHAUSTED);
    assert.deepEqual(seen, ["hi"]);
    const line = await responseLine(server, "Chat");
    assert.equal(line.grpcCode, "ResourceExhausted");
    assert.equal(line.msgs_sent, 2, "the oversized message was produced, not delivered");
    assert.equal(await handled(server, "Chat", "ResourceExhausted"), 1);
    assert.equal(await handled(server, "Chat", "OK"), 0);
  });
});
