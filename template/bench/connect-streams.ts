// Connect client-streaming load for `bench/ab.ts connect-stream`: Sum calls of CALL_MESSAGES messages over h2c by
// @connectrpc/connect-node's client, made back to back as the stream rows' calls are (streams.ts). The calls are
// short so that what Connect's own handler does once a call (the path every Connect stream takes, not the unary
// fast path the Connect rows measure) shows in the CPU time per call.
import { create } from "@bufbuild/protobuf";
import { type Client, createClient } from "@connectrpc/connect";
import { createConnectTransport } from "@connectrpc/connect-node";
import type { Run, Server } from "./lib.js";
import { Service, SumRequestSchema } from "./proto.js";
import { callsBackToBack } from "./streams.js";

const CALL_MESSAGES = 10;
const one = create(SumRequestSchema, { value: 1n });

/** By port: FRESH rounds start the builds on new ones. */
const clients = new Map<number, Client<typeof Service>>();
function clientOf(port: number): Client<typeof Service> {
  let c = clients.get(port);
  if (!c) {
    const transport = createConnectTransport({ baseUrl: `http://127.0.0.1:${port}`, httpVersion: "2" });
    clients.set(port, (c = createClient(Service, transport)));
  }
  return c;
}

async function* input(): AsyncGenerator<typeof one> {
  for (let i = 0; i < CALL_MESSAGES; i++) yield one;
}

/** One Sum call; whether it counted every message. */
async function oneCall(client: Client<typeof Service>): Promise<boolean> {
  const res = await client.sum(input());
  return res.count === CALL_MESSAGES && res.sum === BigInt(CALL_MESSAGES);
}

/** One Connect client-streaming call answered whole, before a server is measured. */
export async function checkConnectStream(s: Pick<Server, "name" | "port">): Promise<void> {
  if (!(await oneCall(clientOf(s.port)))) throw new Error(`${s.name}: Connect Sum over h2c did not count ${CALL_MESSAGES} messages`);
}

/** `n` calls, `concurrency` at a time (bench/instructions.ts connect-stream); throws unless each counted every message. */
export async function connectStreamCalls(port: number, n: number, concurrency: number): Promise<void> {
  const client = clientOf(port);
  let next = 0;
  const worker = async () => {
    while (next++ < n) if (!(await oneCall(client))) throw new Error(`Connect Sum over h2c did not count ${CALL_MESSAGES} messages`);
  };
  await Promise.all(Array.from({ length: concurrency }, worker));
}

/** Calls a second ("req/s") and the server's CPU time per call. */
export function connectStreamLoad(s: Server, seconds: number): Promise<Run> {
  const client = clientOf(s.port);
  return callsBackToBack(s, seconds, 1, async () => ((await oneCall(client)) ? 1 : 0));
}
