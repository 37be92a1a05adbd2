/**
 * An invalid request message fails a bidi call with INVALID_ARGUMENT even when the handler catches the
 * read's error and carries on: whether it then ends, or yields another response (which never goes out).
 */
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { create, type Message } from "@bufbuild/protobuf";
import type { ClientDuplexStream } from "@grpc/grpc-js";
import { Code, defineService } from "../../src/framework/index.js";
import { metadataOf, type RawClient, rawClient, reader, statusOfCall } from "../../src/framework/testing/grpc-streams.js";
import { startTestServer, type TestServer } from "../../src/framework/testing/harness.js";
import { ChatRequestSchema, type ChatResponse, FixtureService } from "../gen/fixture/v1/fixture_pb.js";

describe("a bidi handler that catches an invalid request message", () => {
  let server: TestServer;
  let client: RawClient<typeof FixtureService>;
  const caught: string[] = [];
  const service = defineService(FixtureService, {
    handlers: {
      async *chat(requests, ctx) {
        try {
          for await (const request of requests) yield { text: request.text, seq: 1 };
        } catch (err) {
          caught.push((err as Error).message);
          if (ctx.metadata.get("x-then")[0] === "yield") yield { text: "after the bad message", seq: 2 };
        }
      },
    },
  });
  before(async () => {
    server = await startTestServer([service]);
    client = rawClient(FixtureService, server.grpcAddress);
  });
  after(async () => {
    client.close();
    await server.close();
  });

  for (const then of ["end", "yield"]) {
    test(`still fails the call INVALID_ARGUMENT when the handler then ${then === "end" ? "ends" : "yields again"}`, async () => {
      const call = client.chat(metadataOf({ "x-then": then })) as ClientDuplexStream<Message, Message>;
      const status = statusOfCall(call);
      const read = reader<ChatResponse>(call);
      call.write(create(ChatRequestSchema, { text: "fine" }));
      assert.equal((await read())?.text, "fine");
      call.write(create(ChatRequestSchema, { text: "" })); // text must be 1-1024 characters
      call.end();
      await assert.rejects(read(), (err: { code?: number }) => err.code === Code.INVALID_ARGUMENT);
      assert.equal((await status).code, Code.INVALID_ARGUMENT);
      assert.match(caught.at(-1) ?? "", /text/);
    });
  }
});
