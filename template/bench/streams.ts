// Streaming load for `make bench`: messages per second through server-, client- and bidi-streaming calls
// (Countdown, Sum, Chat), driven by a grpc-js client in the bench process. Each of CONCURRENCY loops
// makes calls of MESSAGES messages back to back until the run's time is up; the figure is messages
// moved per second of the run, and the server's CPU time per message.
import { once } from "node:events";
import { create, type Message } from "@bufbuild/protobuf";
import type { ClientDuplexStream, ClientReadableStream, ClientWritableStream, ServiceError } from "@grpc/grpc-js";
import { type RawClient, rawClient } from "../src/framework/testing/grpc-streams.js";
import { cpuTime, MESSAGE, percentiles, type Run, type Server } from "./lib.js";
import { ChatRequestSchema, Service, SumRequestSchema } from "./proto.js";

export type StreamKind = "server" | "client" | "bidi";

export const MESSAGES = 1000;
const CONCURRENCY = 8;

const clients = new Map<Server, RawClient<typeof Service>>();
function clientOf(s: Server): RawClient<typeof Service> {
  let c = clients.get(s);
  if (!c) clients.set(s, (c = rawClient(Service, `127.0.0.1:${s.port}`)));
  return c;
}

export function closeStreamClients(): void {
  for (const c of clients.values()) c.close();
  clients.clear();
}

const sumRequest = create(SumRequestSchema, { value: 1n });
const chatRequest = create(ChatRequestSchema, { text: MESSAGE });

/** Writes `n` messages with back-pressure (waits for `drain` when grpc-js says its buffer is full), then half-closes. */
async function writeAll(
  call: ClientWritableStream<Message> | ClientDuplexStream<Message, Message>,
  message: Message,
  n: number,
): Promise<void> {
  for (let i = 0; i < n; i++) if (!call.write(message)) await once(call, "drain");
  call.end();
}

/** One call of MESSAGES messages; resolves to the number of messages that went through. */
function oneCall(client: RawClient<typeof Service>, kind: StreamKind): Promise<number> {
  if (kind === "server") {
    return (async () => {
      let n = 0;
      for await (const _ of client.countdown(create(Service.method.countdown.input, { from: MESSAGES })) as ClientReadableStream<Message>)
        n++;
      return n;
    })();
  }
  if (kind === "client") {
    return new Promise((resolve, reject) => {
      const call = client.sum((err: ServiceError | null, res: { count: number }) =>
        err ? reject(err) : resolve(res.count),
      ) as ClientWritableStream<Message>;
      writeAll(call, sumRequest, MESSAGES).catch(reject);
    });
  }
  return (async () => {
    const call = client.chat() as ClientDuplexStream<Message, Message>;
    const writing = writeAll(call, chatRequest, MESSAGES);
    let n = 0;
    for await (const _ of call) n++;
    await writing;
    return n;
  })();
}

/** A load function for bench/lib.ts's measure(): messages/s of `kind` streams for `seconds`. */
export function streamLoad(kind: StreamKind) {
  return (s: Server, seconds: number): Promise<Run> => {
    const client = clientOf(s);
    return callsBackToBack(s, seconds, MESSAGES, () => oneCall(client, kind));
  };
}

/**
 * CONCURRENCY loops making calls back to back for `seconds`: the units the calls moved (what `call` resolves to:
 * messages, or 1 a call) a second, and the server's CPU time per unit. A call that fails or moves fewer than
 * `whole` is an error.
 */
export async function callsBackToBack(s: Server, seconds: number, whole: number, call: () => Promise<number>): Promise<Run> {
  const cpu = cpuTime(s.child.pid);
  const started = performance.now();
  const end = started + seconds * 1000;
  const durations: number[] = [];
  let units = 0;
  let errors = 0;
  await Promise.all(
    Array.from({ length: CONCURRENCY }, async () => {
      while (performance.now() < end) {
        const t = performance.now();
        try {
          const n = await call();
          units += n;
          if (n !== whole) errors++;
        } catch {
          errors++;
        }
        durations.push(performance.now() - t);
      }
    }),
  );
  const elapsed = (performance.now() - started) / 1000;
  const cpuUsed = cpuTime(s.child.pid) - cpu;
  return { rps: units / elapsed, ...percentiles(durations), requests: units, errors, cpuUs: cpuUsed / Math.max(1, units) };
}
