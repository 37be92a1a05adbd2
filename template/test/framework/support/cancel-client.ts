/**
 * A grpc-js client in a process of its own that cancels streaming calls after a few messages (the cancel test
 * runs it so the END_STREAM and RST_STREAM frames cross a real socket between processes, as a real client's do):
 *   node --import tsx cancel-client.ts <port> client|bidi <calls>
 * Client-streaming (Sum): three messages written and flushed, 10 ms, then cancel(). Bidi (Chat): a message, its answer,
 * two more messages, then cancel() (the interop suite's cancel_after_first_response). Prints one JSON line.
 */
import { create, fromBinary, toBinary } from "@bufbuild/protobuf";
import { Client, credentials, Metadata } from "@grpc/grpc-js";
import {
  ChatRequestSchema,
  ChatResponseSchema,
  FixtureService,
  SumRequestSchema,
  SumResponseSchema,
} from "../../gen/fixture/v1/fixture_pb.js";

const [port, kind, count] = [process.argv[2], process.argv[3], Number(process.argv[4] ?? 100)];
// Retries off: a write then completes once its bytes are handed to the socket, not to the retry buffer.
const client = new Client(`127.0.0.1:${port}`, credentials.createInsecure(), { "grpc.enable_retries": 0 });
const statuses: Record<string, number> = {};
const SETTLE_MS = 10;

function written(call: { write(m: unknown, cb: () => void): boolean }, message: unknown): Promise<void> {
  return new Promise((resolve) => call.write(message, resolve));
}

for (let i = 0; i < count; i++) {
  const code = await new Promise<number>((resolve) => {
    void (async () => {
      if (kind === "client") {
        const call = client.makeClientStreamRequest(
          `/${FixtureService.typeName}/Sum`,
          (m: { value: bigint }) => Buffer.from(toBinary(SumRequestSchema, create(SumRequestSchema, m))),
          (b: Buffer) => fromBinary(SumResponseSchema, b),
          new Metadata(),
          (err) => resolve(err?.code ?? 0),
        );
        for (let m = 1; m <= 3; m++) await written(call, { value: BigInt(m) });
        // The server has no answer to wait for before the end: a moment, for its handler to be reading.
        await new Promise((r) => setTimeout(r, SETTLE_MS));
        call.cancel();
      } else {
        const call = client.makeBidiStreamRequest(
          `/${FixtureService.typeName}/Chat`,
          (m: { text: string }) => Buffer.from(toBinary(ChatRequestSchema, create(ChatRequestSchema, m))),
          (b: Buffer) => fromBinary(ChatResponseSchema, b),
          new Metadata(),
        );
        call.on("error", (err: { code: number }) => resolve(err.code));
        call.on("status", (s: { code: number }) => resolve(s.code));
        const first = new Promise((r) => call.once("data", r));
        call.on("data", () => {});
        await written(call, { text: "one" });
        await first;
        await written(call, { text: "two" });
        await written(call, { text: "three" });
        call.cancel();
      }
    })();
  });
  statuses[code] = (statuses[code] ?? 0) + 1;
}
client.close();
console.log(JSON.stringify({ kind, calls: count, clientSaw: statuses }));
