// Shared by the bare reference servers and the peer: the same Echo handler as the fixture service's
// (bench/proto.ts: message, trace ID, received_at), and a way to report counts to the bench over the IPC channel.
import { randomUUID } from "node:crypto";
import { create } from "@bufbuild/protobuf";
import { timestampNow } from "@bufbuild/protobuf/wkt";
import { type EchoRequest, type EchoResponse, EchoResponseSchema } from "../proto.js";

/** Calls answered OK and calls that failed, read by the bench after each run to count gRPC errors. */
export const counts = { ok: 0, errors: 0 };

/** The service's Echo without the framework: trace ID from the request, else a new UUID. */
export function echo(request: EchoRequest): EchoResponse {
  return create(EchoResponseSchema, { message: request.message, traceId: request.traceId || randomUUID(), receivedAt: timestampNow() });
}

/** The service's Sum without the framework: the values added up, and how many there were. */
export async function sum(requests: AsyncIterable<{ value: bigint }>): Promise<{ sum: bigint; count: number }> {
  let total = 0n;
  let count = 0;
  for await (const request of requests) {
    total += request.value;
    count++;
  }
  return { sum: total, count };
}

/** The port to listen on, from PORT (the bench picks a free one). */
export function port(): number {
  const value = Number(process.env.PORT);
  if (!Number.isInteger(value) || value <= 0) throw new Error("PORT must be set");
  return value;
}

/** Tells the bench the server listens, answers its count requests, and exits when the bench goes away. */
export function serve(listening: number): void {
  process.on("message", (m) => {
    if (m === "counts") process.send?.({ counts });
  });
  process.on("disconnect", () => process.exit(0));
  process.send?.({ listening });
}
