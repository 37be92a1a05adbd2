/**
 * The server side of grpc/grpc's interop test cases (doc/interop-test-descriptions.md), run by a real
 * grpc-js client against grpc.testing.TestService hosted by the framework (test/proto/grpcsvc_test/interop/: the
 * package stays grpc.testing, as interop clients call it; the path is the framework's own, so that a repo may add
 * the public grpc/testing protos under proto/).
 * Compression cases are left out: grpc-js does not compress server responses.
 */
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { create, type Message } from "@bufbuild/protobuf";
import type { ClientDuplexStream, ClientReadableStream, ClientWritableStream, Metadata, ServiceError } from "@grpc/grpc-js";
import { Code } from "../../src/framework/index.js";
import { metadataOf, type RawClient, rawClient, reader, statusOfCall } from "../../src/framework/testing/grpc-streams.js";
import { startTestServer, type TestServer } from "../../src/framework/testing/harness.js";
import { EmptySchema } from "../gen/grpcsvc_test/interop/empty_pb.js";
import {
  SimpleRequestSchema,
  type SimpleResponse,
  StreamingInputCallRequestSchema,
  type StreamingInputCallResponse,
  StreamingOutputCallRequestSchema,
  type StreamingOutputCallResponse,
} from "../gen/grpcsvc_test/interop/messages_pb.js";
import { TestService, UnimplementedService } from "../gen/grpcsvc_test/interop/test_pb.js";
import { interopService } from "./fixtures/interop-service.js";

type Callback<T> = (err: ServiceError | null, res: T) => void;

describe("gRPC interop server cases (grpc-js client)", () => {
  let server: TestServer;
  let client: RawClient<typeof TestService>;
  before(async () => {
    server = await startTestServer([interopService]);
    client = rawClient(TestService, server.grpcAddress);
  });
  after(async () => {
    client.close();
    await server.close();
  });

  function unary<T>(
    method: "emptyCall" | "unaryCall",
    request: Message,
    metadata?: Metadata,
  ): Promise<{ res: T; header?: Metadata; trailer?: Metadata }> {
    return new Promise((resolve, reject) => {
      let header: Metadata | undefined;
      let trailer: Metadata | undefined;
      const call = client[method](request, metadata ?? metadataOf({}), ((err, res) =>
        err ? reject(err) : queueMicrotask(() => resolve({ res, header, trailer }))) as Callback<T>) as NodeJS.EventEmitter;
      call.on("metadata", (md: Metadata) => {
        header = md;
      });
      call.on("status", (s: { metadata: Metadata }) => {
        trailer = s.metadata;
      });
    });
  }

  const failure = (p: Promise<unknown>) =>
    p.then(
      () => assert.fail("expected the call to fail"),
      (e: unknown) => e as ServiceError,
    );

  const sizes = (responses: (StreamingOutputCallResponse | null)[]) => responses.map((r) => r?.payload?.body.length);

  test("empty_unary", async () => {
    const { res } = await unary<Message>("emptyCall", create(EmptySchema));
    assert.equal(res.$typeName, "grpc.testing.Empty");
  });

  test("large_unary", async () => {
    const { res } = await unary<SimpleResponse>(
      "unaryCall",
      create(SimpleRequestSchema, { responseSize: 314159, payload: { body: new Uint8Array(271828) } }),
    );
    assert.equal(res.payload?.body.length, 314159);
    assert.ok(res.payload?.body.every((b) => b === 0));
  });

  test("client_streaming", async () => {
    const res = await new Promise<StreamingInputCallResponse>((resolve, reject) => {
      const call = client.streamingInputCall(((err, r) =>
        err ? reject(err) : resolve(r)) as Callback<StreamingInputCallResponse>) as ClientWritableStream<Message>;
      for (const size of [27182, 8, 1828, 45904])
        call.write(create(StreamingInputCallRequestSchema, { payload: { body: new Uint8Array(size) } }));
      call.end();
    });
    assert.equal(res.aggregatedPayloadSize, 74922);
  });

  test("server_streaming", async () => {
    const request = create(StreamingOutputCallRequestSchema, {
      responseParameters: [31415, 9, 2653, 58979].map((size) => ({ size })),
    });
    const got: StreamingOutputCallResponse[] = [];
    for await (const r of client.streamingOutputCall(request) as ClientReadableStream<StreamingOutputCallResponse>) got.push(r);
    assert.deepEqual(sizes(got), [31415, 9, 2653, 58979]);
  });

  test("ping_pong", async () => {
    const call = client.fullDuplexCall() as ClientDuplexStream<Message, Message>;
    const read = reader<StreamingOutputCallResponse>(call);
    const status = statusOfCall(call);
    const requestSizes = [27182, 8, 1828, 45904];
    const responseSizes = [31415, 9, 2653, 58979];
    for (let i = 0; i < 4; i++) {
      call.write(
        create(StreamingOutputCallRequestSchema, {
          responseParameters: [{ size: responseSizes[i] }],
          payload: { body: new Uint8Array(requestSizes[i] as number) },
        }),
      );
      assert.equal((await read())?.payload?.body.length, responseSizes[i]);
    }
    call.end();
    assert.equal(await read(), null);
    assert.equal((await status).code, Code.OK);
  });

  test("empty_stream", async () => {
    const call = client.fullDuplexCall() as ClientDuplexStream<Message, Message>;
    const read = reader<StreamingOutputCallResponse>(call);
    const status = statusOfCall(call);
    call.end();
    assert.equal(await read(), null);
    assert.equal((await status).code, Code.OK);
  });

  test("cancel_after_begin", async () => {
    const done = new Promise<ServiceError | null>((resolve) => {
      const call = client.streamingInputCall(((err) => resolve(err)) as Callback<unknown>) as ClientWritableStream<Message>;
      call.cancel();
    });
    assert.equal((await done)?.code, Code.CANCELLED);
  });

  test("cancel_after_first_response", async () => {
    const call = client.fullDuplexCall() as ClientDuplexStream<Message, Message>;
    const read = reader<StreamingOutputCallResponse>(call);
    const status = statusOfCall(call);
    call.write(
      create(StreamingOutputCallRequestSchema, { responseParameters: [{ size: 31415 }], payload: { body: new Uint8Array(27182) } }),
    );
    assert.equal((await read())?.payload?.body.length, 31415);
    call.cancel();
    assert.equal((await status).code, Code.CANCELLED);
    // The server saw the cancel: its response-time line says CANCELLED, and it keeps serving.
    await unary("emptyCall", create(EmptySchema));
  });

  test("timeout_on_sleeping_server", async () => {
    const call = client.fullDuplexCall(metadataOf({}), { deadline: Date.now() + 1 }) as ClientDuplexStream<Message, Message>;
    const status = statusOfCall(call);
    call.write(create(StreamingOutputCallRequestSchema, { payload: { body: new Uint8Array(27182) } }));
    assert.equal((await status).code, Code.DEADLINE_EXCEEDED);
  });

  const ECHO = { "x-grpc-test-echo-initial": "test_initial_metadata_value" };
  const withEcho = () => {
    const md = metadataOf(ECHO);
    md.set("x-grpc-test-echo-trailing-bin", Buffer.from([0xab, 0xab, 0xab]));
    return md;
  };

  test("custom_metadata (unary)", async () => {
    const { res, header, trailer } = await unary<SimpleResponse>(
      "unaryCall",
      create(SimpleRequestSchema, { responseSize: 314159, payload: { body: new Uint8Array(271828) } }),
      withEcho(),
    );
    assert.equal(res.payload?.body.length, 314159);
    assert.deepEqual(header?.get("x-grpc-test-echo-initial"), ["test_initial_metadata_value"]);
    assert.deepEqual(trailer?.get("x-grpc-test-echo-trailing-bin"), [Buffer.from([0xab, 0xab, 0xab])]);
  });

  test("custom_metadata (full duplex)", async () => {
    const call = client.fullDuplexCall(withEcho()) as ClientDuplexStream<Message, Message>;
    const header = new Promise<Metadata>((resolve) => call.once("metadata", resolve));
    const status = statusOfCall(call);
    const read = reader<StreamingOutputCallResponse>(call);
    call.write(
      create(StreamingOutputCallRequestSchema, { responseParameters: [{ size: 314159 }], payload: { body: new Uint8Array(271828) } }),
    );
    assert.equal((await read())?.payload?.body.length, 314159);
    call.end();
    assert.equal(await read(), null);
    assert.deepEqual((await header).get("x-grpc-test-echo-initial"), ["test_initial_metadata_value"]);
    assert.deepEqual((await status).metadata.get("x-grpc-test-echo-trailing-bin"), [Buffer.from([0xab, 0xab, 0xab])]);
  });

  const STATUS = { code: 2, message: "test status message" };

  test("status_code_and_message (unary)", async () => {
    const err = await failure(unary("unaryCall", create(SimpleRequestSchema, { responseStatus: STATUS })));
    assert.equal(err.code, 2);
    assert.equal(err.details, "test status message");
  });

  test("status_code_and_message (full duplex)", async () => {
    const call = client.fullDuplexCall() as ClientDuplexStream<Message, Message>;
    const read = reader<StreamingOutputCallResponse>(call);
    call.write(create(StreamingOutputCallRequestSchema, { responseStatus: STATUS }));
    call.end();
    const err = await failure(read());
    assert.equal(err.code, 2);
    assert.equal(err.details, "test status message");
  });

  test("special_status_message", async () => {
    const message = "\t\ntest with whitespace\r\nand Unicode BMP ☺ and non-BMP 😈\t\n";
    const err = await failure(unary("unaryCall", create(SimpleRequestSchema, { responseStatus: { code: 2, message } })));
    assert.equal(err.code, 2);
    assert.equal(err.details, message);
  });

  test("unimplemented_method: a method without a handler answers UNIMPLEMENTED, and start-up named it in a warning", async () => {
    const err = await failure(
      new Promise((resolve, reject) =>
        client.unimplementedMethod(create(EmptySchema), ((e, r) => (e ? reject(e) : resolve(r))) as Callback<unknown>),
      ),
    );
    assert.equal(err.code, Code.UNIMPLEMENTED);
    const warnings = server.logs.filter((l) => l.level === "warn" && l.grpcMethod === "/grpc.testing.TestService/UnimplementedMethod");
    assert.equal(warnings.length, 1);
  });

  test("unimplemented_service", async () => {
    const other = rawClient(UnimplementedService, server.grpcAddress);
    try {
      const err = await failure(
        new Promise((resolve, reject) =>
          other.unimplementedCall(create(EmptySchema), ((e, r) => (e ? reject(e) : resolve(r))) as Callback<unknown>),
        ),
      );
      assert.equal(err.code, Code.UNIMPLEMENTED);
    } finally {
      other.close();
    }
  });
});
