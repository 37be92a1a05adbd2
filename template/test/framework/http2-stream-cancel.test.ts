/**
 * A cancel is not the end of the input on the HTTP port either: a Node client cancels a stream with END_STREAM
 * and then RST_STREAM (Http2Stream.close), which can arrive apart, so over HTTP/2 the end of a Connect or NDJSON
 * request stream counts as the client's half-close only once a PING sent after it has been answered, as on the
 * gRPC port (half-close.ts). Before, 20 of 20 such cancels of a client stream after two whole messages reached the
 * handler as complete input and were counted OK (Connect, then NDJSON). node:http2 against a real server.
 */
import assert from "node:assert/strict";
import { once } from "node:events";
import { type ClientHttp2Stream, constants, connect as http2Connect } from "node:http2";
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
    halfMessage: Buffer.from([0, 0, 0, 0, 2, 0x08]),
  },
  {
    name: "NDJSON",
    path: "/api/v1/sum",
    contentType: "application/x-ndjson",
    twoMessages: Buffer.from('{"value":5}\n{"value":5}\n'),
    halfMessage: Buffer.from('{"value":'),
    // The default gateway forwards the end of input to the gRPC port, which checks it there: in process, the
    // gateway's own reader has to.
    env: { GATEWAY_MODE: "in-process" },
  },
];

/** As Http2Stream.close() sends them when a write is under way: END_STREAM, and the reset in a later write. */
async function cancel(stream: ClientHttp2Stream): Promise<void> {
  stream.end();
  await new Promise((r) => setImmediate(() => setImmediate(r)));
  stream.close(constants.NGHTTP2_CANCEL);
}

for (const protocol of PROTOCOLS)
  describe(`a ${protocol.name} client stream over HTTP/2, ended by its client`, () => {
    let server: TestServer;
    before(async () => {
      server = await startTestServer([fixtureService], protocol.env);
    });
    after(() => server.close());

    /** Sum's calls by outcome since the last look, once CALLS of them have ended (each is counted as its handler ends). */
    const seen: Record<string, number> = { Canceled: 0, OK: 0, InvalidArgument: 0 };
    async function outcomes(): Promise<Record<string, number>> {
      const now: Record<string, number> = {};
      for (;;) {
        for (const code of Object.keys(seen)) now[code] = (await handled(server, "Sum", code)) - seen[code]!;
        if (Object.values(now).reduce((a, b) => a + b) >= CALLS) break;
        await new Promise((r) => setImmediate(r));
      }
      for (const code of Object.keys(seen)) seen[code]! += now[code]!;
      return now;
    }

    /** CALLS client streams of `body` on one connection, each ended by `end` once the server has read it. */
    async function calls(body: Buffer, end: (stream: ClientHttp2Stream) => void | Promise<void>): Promise<void> {
      const session = http2Connect(server.httpUrl);
      try {
        for (let i = 0; i < CALLS; i++) {
          const stream = session.request(
            { ":method": "POST", ":path": protocol.path, "content-type": protocol.contentType },
            { endStream: false },
          );
          stream.on("error", () => {});
          stream.resume();
          stream.write(body);
          await new Promise((r) => session.ping(r)); // the server has read the body: a cancel mid-upload
          await end(stream);
          await once(stream, "close");
        }
      } finally {
        session.destroy();
      }
    }

    test("a cancel (END_STREAM then RST_STREAM CANCEL) reaches the handler as CANCELLED, not as the end of its input", async () => {
      await calls(protocol.twoMessages, cancel);
      assert.deepEqual(await outcomes(), { Canceled: CALLS, OK: 0, InvalidArgument: 0 });
    });

    test("a cancel in the middle of a message is CANCELLED, not a malformed message", async () => {
      await calls(Buffer.concat([protocol.twoMessages, protocol.halfMessage]), cancel);
      assert.deepEqual(await outcomes(), { Canceled: CALLS, OK: 0, InvalidArgument: 0 });
    });

    test("a half-close in the middle of a message is INVALID_ARGUMENT: the input is malformed", async () => {
      await calls(Buffer.concat([protocol.twoMessages, protocol.halfMessage]), (stream) => {
        stream.end();
      });
      assert.deepEqual(await outcomes(), { Canceled: 0, OK: 0, InvalidArgument: CALLS });
    });

    test("a half-close (END_STREAM alone) is the end of the input: every call completes", async () => {
      await calls(protocol.twoMessages, (stream) => {
        stream.end();
      });
      assert.deepEqual(await outcomes(), { Canceled: 0, OK: CALLS, InvalidArgument: 0 });
    });
  });
