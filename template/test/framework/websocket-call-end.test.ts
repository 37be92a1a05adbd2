/**
 * How a WebSocket call ends when the server ends it: a handler still reading its requests sees the
 * error that ended the call, never a clean end of input (it would take a partial upload for the whole).
 */
import assert from "node:assert/strict";
import { once } from "node:events";
import { after, before, describe, test } from "node:test";
import { WebSocket } from "ws";
import { WS_PROTOCOL } from "../../src/framework/browser/websocket.js";
import { Code, defineService, GrpcError } from "../../src/framework/index.js";
import { startTestServer, type TestServer } from "../../src/framework/testing/harness.js";
import { FixtureService } from "../gen/fixture/v1/fixture_pb.js";

/** How each Sum handler's reading ended. */
const outcomes: string[] = [];
let firstRead: () => void = () => {};

const service = defineService(FixtureService, {
  handlers: {
    async sum(requests) {
      let count = 0;
      try {
        for await (const _ of requests) {
          count++;
          firstRead();
        }
      } catch (err) {
        outcomes.push(`failed with ${(err as GrpcError).code} after ${count}`);
        throw err;
      }
      outcomes.push(`clean end after ${count}`);
      return { sum: 0n, count };
    },
  },
  preStart(app) {
    // Fails a Sum call once its handler has read one message, while the handler waits for the next.
    app.prepend({
      name: "stops-sum",
      interceptor: (next, method) =>
        method.name !== "Sum"
          ? next
          : async (call) => {
              const read = new Promise<void>((resolve) => {
                firstRead = resolve;
              });
              next(call).catch(() => {});
              await read;
              throw new GrpcError(Code.ABORTED, "stopped by an interceptor");
            },
    });
  },
});

async function until<T>(find: () => T | undefined): Promise<T> {
  for (;;) {
    const found = find();
    if (found !== undefined) return found;
    await new Promise((r) => setImmediate(r));
  }
}

describe("a WebSocket call the server ends", () => {
  let server: TestServer;
  before(async () => {
    server = await startTestServer([service]);
  });
  after(() => server.close());

  test("a client-streaming handler still reading gets the call's error, not a clean end of input", async () => {
    const ws = new WebSocket(`${server.httpUrl.replace(/^http/, "ws")}/fixture.v1.FixtureService/Sum`, [WS_PROTOCOL]);
    const frames: unknown[] = [];
    ws.on("message", (data) => frames.push(JSON.parse(String(data))));
    await once(ws, "open");
    ws.send(JSON.stringify({ value: "1" }));
    const [code] = (await once(ws, "close")) as [number];
    assert.equal(code, 1000);
    assert.deepEqual(frames, [{ error: { code: Code.ABORTED, message: "stopped by an interceptor", details: [] } }]);
    assert.equal(await until(() => outcomes[0]), `failed with ${Code.ABORTED} after 1`);
  });
});
