/**
 * The typed outbound client (createClient / app.createClient) for client-streaming and bidi methods,
 * against real servers: requests from an AsyncIterable, typed from the generated code; the trace ID and
 * deadline of the current call forwarded; grpc_client_* counting each message; both directions of a bidi
 * call at once; an error of the requests or an early break ending the call.
 */
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { type CallContext, type Client, Code, defineService, type GrpcError } from "../../src/framework/index.js";
import { startTestServer, type TestServer } from "../../src/framework/testing/harness.js";
import { FixtureService } from "../gen/fixture/v1/fixture_pb.js";
import { fixtureService } from "./fixtures/fixture-service.js";

/** What the downstream handlers saw of each call. */
const seen: { method: string; traceId: string; deadline: number }[] = [];
let chatEnded: (reason: unknown) => void = () => {};

const downstream = defineService(FixtureService, {
  handlers: {
    // The fixture's Sum, once the call is recorded.
    async sum(requests, ctx: CallContext) {
      seen.push({ method: "Sum", traceId: ctx.traceId, deadline: ctx.deadline });
      return fixtureService.handlers.sum!(requests, ctx);
    },
    async *chat(requests, ctx: CallContext) {
      seen.push({ method: "Chat", traceId: ctx.traceId, deadline: ctx.deadline });
      ctx.signal.addEventListener("abort", () => chatEnded(ctx.signal.reason), { once: true });
      let seq = 0;
      for await (const request of requests) yield { text: request.text.toUpperCase(), seq: ++seq };
    },
  },
});

let next: Client<typeof FixtureService>;

/** Upstream: its Echo calls the downstream's Sum and Chat with the typed client, inside its own call. */
const upstream = defineService(FixtureService, {
  handlers: {
    async echo(request, ctx: CallContext) {
      const values = request.message.split(",");
      const total = await next.sum(
        (async function* () {
          for (const v of values) yield { value: BigInt(v) };
        })(),
      );
      // Each request is sent only once the answer to the previous one came back: both directions at once.
      let answered: () => void = () => {};
      const texts: string[] = [];
      const chat = next.chat(
        (async function* () {
          for (const v of values) {
            const answer = new Promise<void>((resolve) => {
              answered = resolve;
            });
            yield { text: `m${v}` };
            await answer;
          }
        })(),
      );
      for await (const reply of chat) {
        texts.push(`${reply.seq}:${reply.text}`);
        answered();
      }
      return { message: `${total.sum}/${total.count} ${texts.join(" ")}`, traceId: ctx.traceId };
    },
  },
});

function sample(text: string, name: string, method: string, type: string, code?: string): number | undefined {
  const line = text
    .split("\n")
    .find(
      (l) =>
        l.startsWith(`${name}{`) &&
        l.includes(`grpc_method="${method}"`) &&
        l.includes(`grpc_type="${type}"`) &&
        (code === undefined || l.includes(`grpc_code="${code}"`)),
    );
  return line === undefined ? undefined : Number(line.slice(line.lastIndexOf(" ") + 1));
}

describe("createClient: client-streaming and bidi methods", () => {
  let down: TestServer;
  let up: TestServer;
  before(async () => {
    down = await startTestServer([downstream]);
    up = await startTestServer([upstream]);
    next = up.app.createClient(FixtureService, down.grpcAddress);
  });
  after(async () => {
    next.close();
    await up.close();
    await down.close();
  });

  test("inside a call: the trace ID and the deadline go along, each message is counted, a bidi reply comes before the next request", async () => {
    const deadline = Date.now() + 20_000;
    const res = await up.client(FixtureService).echo({ message: "1,2,3" }, { metadata: { "x-trace-id": "stream-hop" }, deadline });
    assert.equal(res.message, "6/3 1:M1 2:M2 3:M3");
    assert.deepEqual(
      seen.map((s) => [s.method, s.traceId]),
      [
        ["Sum", "stream-hop"],
        ["Chat", "stream-hop"],
      ],
    );
    // grpc-timeout carries it in whole units, so it may come out a few ms later than it went in.
    for (const s of seen) assert.ok(s.deadline <= deadline + 1000, `${s.method} got the caller's deadline, not none`);
    const metrics = await (await fetch(`${up.httpUrl}/metrics`)).text();
    assert.equal(sample(metrics, "grpc_client_msg_sent_total", "Sum", "client_stream"), 3);
    assert.equal(sample(metrics, "grpc_client_msg_received_total", "Sum", "client_stream"), 1);
    assert.equal(sample(metrics, "grpc_client_handled_total", "Sum", "client_stream", "OK"), 1);
    assert.equal(sample(metrics, "grpc_client_msg_sent_total", "Chat", "bidi_stream"), 3);
    assert.equal(sample(metrics, "grpc_client_msg_received_total", "Chat", "bidi_stream"), 3);
    assert.equal(sample(metrics, "grpc_client_handled_total", "Chat", "bidi_stream", "OK"), 1);
  });

  test("an error of the requests cancels the call, and is what the caller gets", async () => {
    const broken = new Error("no more input");
    async function* failing() {
      yield { value: 1n };
      throw broken;
    }
    await assert.rejects(next.sum(failing()), (err) => err === broken);
    const replies: string[] = [];
    await assert.rejects(
      (async () => {
        for await (const reply of next.chat(
          (async function* () {
            yield { text: "one" };
            throw broken;
          })(),
        ))
          replies.push(reply.text);
      })(),
      (err) => err === broken,
    );
  });

  test("a server error reaches the caller with its code", async () => {
    const err = await next
      .sum(
        (async function* () {
          yield { value: 1n };
        })(),
        { deadline: Date.now() - 1 },
      )
      .catch((e: unknown) => e);
    assert.equal((err as GrpcError).code, Code.DEADLINE_EXCEEDED);
  });

  test("leaving a bidi call's responses early cancels the call: the server's handler is told", async () => {
    const ended = new Promise<unknown>((resolve) => {
      chatEnded = resolve;
    });
    let stopped = false;
    async function* oneThenMore() {
      try {
        yield { text: "n0" };
        await ended;
        yield { text: "n1" }; // produced once the call is over: it is not sent, and the source is closed
      } finally {
        stopped = true;
      }
    }
    for await (const reply of next.chat(oneThenMore())) {
      assert.equal(reply.text, "N0");
      break;
    }
    assert.ok((await ended) instanceof Error, "the handler's signal aborted");
    while (!stopped) await new Promise((r) => setImmediate(r)); // the source's finally ran: it was closed
  });
});
