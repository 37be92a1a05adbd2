import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import { after, before, describe, test } from "node:test";
import { promisify } from "node:util";
import { create, type Message } from "@bufbuild/protobuf";
import type { ClientDuplexStream, ClientWritableStream, ServiceError } from "@grpc/grpc-js";
import { Code } from "../src/framework/index.js";
import { type RawClient, rawClient, reader } from "../src/framework/testing/grpc-streams.js";
import { startTestServer, type TestServer } from "../src/framework/testing/harness.js";
import {
  ChatRequestSchema,
  type ChatResponse,
  ExampleService,
  SumRequestSchema,
  type SumResponse,
} from "../src/gen/example/v1/example_pb.js";
import { exampleService } from "../src/service/example-service.js";

const run = promisify(execFile);

describe("Sum and Chat over gRPC", () => {
  let server: TestServer;
  let client: RawClient<typeof ExampleService>;
  before(async () => {
    server = await startTestServer([exampleService]);
    client = rawClient(ExampleService, server.grpcAddress);
  });
  after(async () => {
    client.close();
    await server.close();
  });

  function sum(values: bigint[]): Promise<SumResponse> {
    return new Promise((resolve, reject) => {
      const call = client.sum((err: ServiceError | null, res: SumResponse) =>
        err ? reject(err) : resolve(res),
      ) as ClientWritableStream<Message>;
      for (const value of values) call.write(create(SumRequestSchema, { value }));
      call.end();
    });
  }

  test("Sum adds up every value and counts the messages once the client half-closes", async () => {
    const res = await sum([1n, 2n, 39n]);
    assert.equal(res.sum, 42n);
    assert.equal(res.count, 3);
  });

  test("Sum of no message is sum 0, count 0", async () => {
    const res = await sum([]);
    assert.equal(res.sum, 0n);
    assert.equal(res.count, 0);
  });

  test("Chat answers each message before the next one is sent, with seq its position", async () => {
    const call = client.chat() as ClientDuplexStream<Message, Message>;
    const read = reader<ChatResponse>(call);
    for (const [i, text] of ["a", "b", "c"].entries()) {
      call.write(create(ChatRequestSchema, { text }));
      const answer = await read(); // the next request is written only after this answer arrived
      assert.equal(answer?.text, text);
      assert.equal(answer?.seq, i + 1);
    }
    call.end();
    assert.equal(await read(), null);
  });

  test("Chat ends the call with INVALID_ARGUMENT and a BadRequest at the first invalid message, after answering the valid ones", async () => {
    const call = client.chat() as ClientDuplexStream<Message, Message>;
    const read = reader<ChatResponse>(call);
    call.write(create(ChatRequestSchema, { text: "ok" }));
    assert.equal((await read())?.seq, 1);
    call.write(create(ChatRequestSchema, { text: "" }));
    const err = (await read().then(
      () => assert.fail("expected the call to fail"),
      (e: unknown) => e,
    )) as ServiceError;
    assert.equal(err.code, Code.INVALID_ARGUMENT);
    assert.ok(err.metadata.get("grpc-status-details-bin").length === 1, "BadRequest details in the trailer");
  });

  test("the response-time line of a stream counts the messages received and sent", async () => {
    const call = client.chat() as ClientDuplexStream<Message, Message>;
    const read = reader<ChatResponse>(call);
    call.write(create(ChatRequestSchema, { text: "x", traceId: "chat-trace-1" }));
    await read();
    call.write(create(ChatRequestSchema, { text: "y" }));
    await read();
    call.end();
    await read();
    const line = await waitFor(() =>
      server.logs.find(
        (l) => l.msg === "response time" && l.grpcMethod === "/example.v1.ExampleService/Chat" && l.trace === "chat-trace-1",
      ),
    );
    assert.equal(line.grpcCode, "OK");
    assert.equal(line.msgs_received, 2);
    assert.equal(line.msgs_sent, 2);
  });

  async function waitFor<T>(find: () => T | undefined): Promise<T> {
    for (let i = 0; i < 200; i++) {
      const found = find();
      if (found !== undefined) return found;
      await new Promise((r) => setImmediate(r));
    }
    assert.fail("log line never written");
  }

  test("buf curl streams three messages into Sum and into Chat", async () => {
    const url = (method: string) => `http://${server.grpcAddress}/example.v1.ExampleService/${method}`;
    const buf = (method: string, data: string) =>
      run("node_modules/.bin/buf", ["curl", "--protocol", "grpc", "--http2-prior-knowledge", "--data", data, url(method)]);
    const sumOut = await buf("Sum", '{"value":"1"} {"value":"2"} {"value":"3"}');
    assert.deepEqual(JSON.parse(sumOut.stdout), { sum: "6", count: 3 });
    const chatOut = await buf("Chat", '{"text":"one"}\n{"text":"two"}\n{"text":"three"}');
    const answers = chatOut.stdout
      .trim()
      .split(/\n(?=\{)/)
      .map((s) => JSON.parse(s));
    assert.deepEqual(answers, [
      { text: "one", seq: 1 },
      { text: "two", seq: 2 },
      { text: "three", seq: 3 },
    ]);
  });
});
