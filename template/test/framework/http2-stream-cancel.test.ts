/**
 * A cancel is not the end of the input on the HTTP port either: a Node client cancels a stream with END_STREAM
 * and then RST_STREAM (Http2Stream.close), which can arrive apart, so over HTTP/2 the end of a Connect or NDJSON
 * request stream counts as the client's half-close only once a PING sent after it has been answered, as on the
 * gRPC port (half-close.ts). Before, 20 of 20 such cancels of a client stream after two whole messages reached the
 * handler as complete input and were counted OK (Connect, then NDJSON). node:http2 against a real server.
 */
import assert from "node:assert/strict";
import { once } from "node:events";
import { constants, connect as http2Connect } from "node:http2";
import { after, before, describe, test } from "node:test";
import { startTestServer, type TestServer } from "../../src/framework/testing/harness.js";
import { FixtureService } from "../gen/fixture/v1/fixture_pb.js";
import { fixtureService } from "./fixtures/fixture-service.js";
import { handled } from "./support/metrics.js";

const CALLS = 20;
/** How each protocol posts two whole SumRequest { value: 5 } messages. */
const PROTOCOLS = [
  {
    name: "Connect",
    path: `/${FixtureService.typeName}/Sum`,
    contentType: "application/connect+proto",
    twoMessages: Buffer.from([0, 0, 0, 0, 2, 0x08, 0x05, 0, 0, 0, 0, 2, 0x08, 0x05]),
  },
  {
    name: "NDJSON",
    path: "/api/v1/sum",
    contentType: "application/x-ndjson",
    twoMessages: Buffer.from('{"value":5}\n{"value":5}\n'),
    // The default gateway forwards the end of input to the gRPC port, which checks it there: in process, the
    // gateway's own reader has to.
    env: { GATEWAY_MODE: "in-process" },
  },
];

for (const protocol of PROTOCOLS)
  describe(`a ${protocol.name} client stream over HTTP/2, ended by its client`, () => {
    let server: TestServer;
    before(async () => {
      server = await startTestServer([fixtureService], protocol.env);
    });
    after(() => server.close());

    /** CALLS client streams of two whole messages on one connection, each ended by `end` once the server has both. */
    async function calls(end: (stream: ReturnType<ReturnType<typeof http2Connect>["request"]>) => void | Promise<void>): Promise<void> {
      const session = http2Connect(server.httpUrl);
      try {
        for (let i = 0; i < CALLS; i++) {
          const stream = session.request(
            { ":method": "POST", ":path": protocol.path, "content-type": protocol.contentType },
            { endStream: false },
          );
          stream.on("error", () => {});
          stream.resume();
          stream.write(protocol.twoMessages);
          await new Promise((r) => session.ping(r)); // the server has read both messages: a cancel mid-upload
          await end(stream);
          await once(stream, "close");
        }
      } finally {
        session.destroy();
      }
    }

    test("a cancel (END_STREAM then RST_STREAM CANCEL) reaches the handler as CANCELLED, not as the end of its input", async () => {
      // As Http2Stream.close() sends them when a write is under way: END_STREAM, and the reset in a later write.
      await calls(async (stream) => {
        stream.end();
        await new Promise((r) => setImmediate(() => setImmediate(r)));
        stream.close(constants.NGHTTP2_CANCEL);
      });
      // Counted as each handler ends, after its stream closed on the client.
      const ended = async () => (await handled(server, "Sum", "Canceled")) + (await handled(server, "Sum", "OK"));
      while ((await ended()) < CALLS) await new Promise((r) => setImmediate(r));
      assert.equal(await handled(server, "Sum", "Canceled"), CALLS);
      assert.equal(await handled(server, "Sum", "OK"), 0);
    });

    test("a half-close (END_STREAM alone) is the end of the input: every call completes", async () => {
      const before = await handled(server, "Sum", "OK");
      await calls((stream) => {
        stream.end();
      });
      assert.equal((await handled(server, "Sum", "OK")) - before, CALLS);
    });
  });
