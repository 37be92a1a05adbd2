import assert from "node:assert/strict";
import { connect, constants } from "node:http2";
import { describe, test } from "node:test";
import { create, toBinary } from "@bufbuild/protobuf";
import { Code } from "../../src/framework/index.js";
import { startTestServer } from "../../src/framework/testing/harness.js";
import { statusOf } from "../../src/framework/testing/status.js";
import { EchoRequestSchema, FixtureService } from "../gen/fixture/v1/fixture_pb.js";
import { fixtureService } from "./fixtures/fixture-service.js";

const THIRTY_DAYS_MS = 30 * 24 * 3600 * 1000;
/** Long enough that a timer armed with an overflowing delay (Node fires it after 1 ms) ends the call first. */
const DELAY_MS = 150;

/** A unary gRPC call over node:http2 with the exact `grpc-timeout` given; resolves to its grpc-status. */
function rawEcho(address: string, grpcTimeout: string): Promise<number> {
  const payload = toBinary(EchoRequestSchema, create(EchoRequestSchema, { message: "raw", delayMs: DELAY_MS }));
  const frame = Buffer.alloc(5 + payload.length);
  frame.writeUInt32BE(payload.length, 1);
  frame.set(payload, 5);
  const session = connect(`http://${address}`);
  return new Promise<number>((resolve, reject) => {
    const stream = session.request({
      [constants.HTTP2_HEADER_METHOD]: "POST",
      [constants.HTTP2_HEADER_PATH]: "/fixture.v1.FixtureService/Echo",
      "content-type": "application/grpc",
      te: "trailers",
      "grpc-timeout": grpcTimeout,
    });
    let status: number | undefined;
    const take = (headers: Record<string, unknown>) => {
      if (headers["grpc-status"] !== undefined) status = Number(headers["grpc-status"]);
    };
    stream.on("response", take);
    stream.on("trailers", take);
    stream.on("error", reject);
    stream.on("close", () => (status === undefined ? reject(new Error("no grpc-status")) : resolve(status)));
    stream.resume();
    stream.end(frame);
  }).finally(() => session.close());
}

describe("deadlines longer than a timer holds (2^31-1 ms) are clamped, never expired at once", () => {
  test("over gRPC: a grpc-js client with a 30-day deadline is answered", async (t) => {
    const server = await startTestServer([fixtureService]);
    t.after(() => server.close());
    const client = server.client(FixtureService);
    const deadline = new Date(Date.now() + THIRTY_DAYS_MS);
    const response = await client.echo({ message: "thirty days", delayMs: DELAY_MS }, { deadline });
    assert.equal(response.message, "thirty days");
    // And a short deadline still expires: clamping only touches the ones a timer cannot hold.
    const short = await statusOf(client.echo({ message: "short", delayMs: 5000 }, { deadline: new Date(Date.now() + 100) }));
    assert.equal(short.code, Code.DEADLINE_EXCEEDED);
  });

  test("over gRPC: grpc-timeout values just above the limit, of 30 days and the largest the wire allows, are answered", async (t) => {
    const server = await startTestServer([fixtureService]);
    t.after(() => server.close());
    // Longer than the 8 digits gRPC allows: grpc-js reads the first 8 digits before a unit, so they are clamped too.
    const oversized = ["12345678901234567890S", `${"9".repeat(4000)}H`];
    for (const timeout of ["2147484S", "35792M", "2592000S", "720H", "99999999H", "99999999S", ...oversized]) {
      assert.equal(await rawEcho(server.grpcAddress, timeout), Code.OK, timeout.slice(0, 30));
    }
    assert.equal(await rawEcho(server.grpcAddress, "2147483S"), Code.OK, "the longest one that fits, unchanged");
  });

  test("over gRPC-Web: grpc-timeout of 30 days, or just above the limit, is answered", async (t) => {
    const server = await startTestServer([fixtureService]);
    t.after(() => server.close());
    const payload = toBinary(EchoRequestSchema, create(EchoRequestSchema, { message: "web", delayMs: DELAY_MS }));
    const frame = Buffer.alloc(5 + payload.length);
    frame.writeUInt32BE(payload.length, 1);
    frame.set(payload, 5);
    for (const timeout of ["720H", "2147484S", "35792M", "99999999H"]) {
      const res = await fetch(`${server.httpUrl}/fixture.v1.FixtureService/Echo`, {
        method: "POST",
        headers: { "content-type": "application/grpc-web+proto", "grpc-timeout": timeout },
        body: frame,
      });
      assert.equal(res.status, 200, timeout);
      // The status is in the trailer frame at the end of the body.
      assert.match(Buffer.from(await res.arrayBuffer()).toString("latin1"), /grpc-status: ?0\r\n/, timeout);
    }
  });

  for (const mode of ["tcp", "unix", "in-process"] as const) {
    test(`over HTTP (gateway ${mode}): Grpc-Timeout of 30 days and of 99999999H is answered, unary and streaming`, async (t) => {
      const server = await startTestServer([fixtureService], { GATEWAY_MODE: mode });
      t.after(() => server.close());
      for (const timeout of ["720H", "2592000S", "99999999H"]) {
        const res = await fetch(`${server.httpUrl}/api/v1/echo`, {
          method: "POST",
          headers: { "content-type": "application/json", "grpc-timeout": timeout },
          body: JSON.stringify({ message: "long", delayMs: DELAY_MS }),
        });
        assert.equal(res.status, 200, `${timeout}: ${await res.clone().text()}`);
        assert.equal(((await res.json()) as { message: string }).message, "long");
        const stream = await fetch(`${server.httpUrl}/api/v1/countdown/3?intervalMs=${DELAY_MS / 3}`, {
          headers: { "grpc-timeout": timeout },
        });
        assert.equal(stream.status, 200, timeout);
        const lines = (await stream.text()).trim().split("\n");
        assert.deepEqual(
          lines.map((l) => JSON.parse(l) as unknown),
          [3, 2, 1].map((remaining) => ({ result: { remaining } })),
          timeout,
        );
      }
    });
  }
});
