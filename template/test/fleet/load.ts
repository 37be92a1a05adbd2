/**
 * Mixed load that counts every call's final status, by protocol: gRPC unary (Echo), a server stream (Countdown),
 * a bidi stream (Chat), REST (fetch), a WebSocket stream (Countdown). A call succeeds only if it ends OK with
 * every message it should have; anything else is a failure, counted by its reason. Calls are paced, so the load
 * stays bounded on a small machine.
 */
import { create, fromBinary, toBinary } from "@bufbuild/protobuf";
import { type ChannelOptions, Client, credentials, type ServiceError } from "@grpc/grpc-js";
import { OVERLOADED_MESSAGE } from "../../src/framework/call/status.js";
import {
  type ChatRequest,
  ChatRequestSchema,
  type CountdownRequest,
  CountdownRequestSchema,
  CountdownResponseSchema,
  type EchoRequest,
  EchoRequestSchema,
  EchoResponseSchema,
} from "../../src/gen/example/v1/example_pb.js";

export const PROTOCOLS = ["grpc-unary", "grpc-server-stream", "grpc-bidi", "rest", "websocket"] as const;
export type Protocol = (typeof PROTOCOLS)[number];

export interface Tally {
  calls: number;
  failed: number;
  /**
   * Calls the overload protection refused (UNAVAILABLE "server overloaded: retry later", before any work): not
   * accepted, so not failed; a client retries them (HAProxy does for REST's 503). Counted apart, and printed.
   */
  shed: number;
  /** Failures by reason ("UNAVAILABLE: …", "HTTP 503", "ws close 1006"…). */
  reasons: Record<string, number>;
}

export type Tallies = Record<Protocol, Tally>;

export function emptyTallies(): Tallies {
  return Object.fromEntries(PROTOCOLS.map((p) => [p, { calls: 0, failed: 0, shed: 0, reasons: {} }])) as Tallies;
}

const SERVICE = "/example.v1.ExampleService";
const STREAM = { from: 4, intervalMs: 25 };
const CHAT_MESSAGES = 3;

/** A grpc-js client as a team would make one: default options (transparent retries on, no retry policy). */
export function grpcClient(target: string, options: ChannelOptions = {}): Client {
  return new Client(target, credentials.createInsecure(), options);
}

const serialize =
  <T>(schema: Parameters<typeof toBinary>[0]) =>
  (m: T) =>
    Buffer.from(toBinary(schema, m as never));
const raw = (b: Buffer) => b;

export function grpcUnary(client: Client, message: string): Promise<void> {
  return new Promise((resolve, reject) =>
    client.makeUnaryRequest(
      `${SERVICE}/Echo`,
      serialize<EchoRequest>(EchoRequestSchema),
      raw,
      create(EchoRequestSchema, { message }),
      (err: ServiceError | null, response?: Buffer) => {
        if (err) return reject(new Error(`${err.code} ${err.details}`));
        if (fromBinary(EchoResponseSchema, response!).message !== message) return reject(new Error("wrong echo"));
        resolve();
      },
    ),
  );
}

export function grpcServerStream(client: Client): Promise<void> {
  return new Promise((resolve, reject) => {
    const call = client.makeServerStreamRequest(
      `${SERVICE}/Countdown`,
      serialize<CountdownRequest>(CountdownRequestSchema),
      raw,
      create(CountdownRequestSchema, STREAM),
    );
    let received = 0;
    call.on("data", (b: Buffer) => {
      fromBinary(CountdownResponseSchema, b);
      received++;
    });
    call.on("error", (err: ServiceError) => reject(new Error(`${err.code} ${err.details}`)));
    call.on("status", (s: { code: number }) => {
      if (s.code !== 0) return;
      if (received === STREAM.from) resolve();
      else reject(new Error(`stream ended OK after ${received} of ${STREAM.from} messages`));
    });
  });
}

export function grpcBidi(client: Client): Promise<void> {
  return new Promise((resolve, reject) => {
    const call = client.makeBidiStreamRequest(`${SERVICE}/Chat`, serialize<ChatRequest>(ChatRequestSchema), raw);
    let received = 0;
    call.on("data", () => {
      received++;
      if (received < CHAT_MESSAGES) call.write(create(ChatRequestSchema, { text: `m${received}` }));
      else call.end();
    });
    call.on("error", (err: ServiceError) => reject(new Error(`${err.code} ${err.details}`)));
    call.on("status", (s: { code: number }) => {
      if (s.code !== 0) return;
      if (received === CHAT_MESSAGES) resolve();
      else reject(new Error(`chat ended OK after ${received} of ${CHAT_MESSAGES} answers`));
    });
    call.write(create(ChatRequestSchema, { text: "m0" }));
  });
}

export async function rest(baseUrl: string, message: string): Promise<void> {
  const res = await fetch(`${baseUrl}/api/v1/echo`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ message }),
  });
  const text = await res.text();
  if (res.status !== 200) throw new Error(`HTTP ${res.status} ${text.slice(0, 80)}`);
  if ((JSON.parse(text) as { message?: string }).message !== message) throw new Error("wrong echo");
}

export function websocket(wsUrl: string): Promise<void> {
  return new Promise((resolve, reject) => {
    const ws = new WebSocket(`${wsUrl}${SERVICE.slice(1)}/Countdown`.replace(/([^:])\/\//, "$1/"), ["grpc-json-stream.v1"]);
    let results = 0;
    let ended = false;
    ws.onopen = () => ws.send(JSON.stringify(STREAM));
    ws.onmessage = (e) => {
      const frame = JSON.parse(String(e.data)) as { result?: unknown; end?: unknown; error?: { code: number; message: string } };
      if (frame.result !== undefined) results++;
      else if (frame.end !== undefined) ended = true;
      else if (frame.error) reject(new Error(`ws error ${frame.error.code} ${frame.error.message}`));
    };
    ws.onerror = () => {};
    ws.onclose = (e) => {
      if (ended && results === STREAM.from && e.code === 1000) resolve();
      else reject(new Error(`ws close ${e.code} after ${results} results${ended ? " and end" : ""}`));
    };
  });
}

export interface LoadTargets {
  /** grpc-js client (through HAProxy, or dns:/// with round_robin). */
  grpc: Client;
  /** http://host:port of the HTTP frontend; undefined: no REST or WebSocket load. */
  httpUrl?: string | undefined;
}

/** How many loops call each protocol at once, and the pause after each call. */
const LOOPS: Record<Protocol, number> = { "grpc-unary": 3, "grpc-server-stream": 2, "grpc-bidi": 2, rest: 2, websocket: 1 };
const PAUSE_MS = 15;

/**
 * Runs the load until `stop()` resolves, counting into `tallies()` (switch phases with `setTallies`).
 * Resolves when every call begun has ended.
 */
export function startLoad(targets: LoadTargets) {
  let current = emptyTallies();
  let stopping = false;
  let n = 0;
  const call: Record<Protocol, () => Promise<void>> = {
    "grpc-unary": () => grpcUnary(targets.grpc, `u${n++}`),
    "grpc-server-stream": () => grpcServerStream(targets.grpc),
    "grpc-bidi": () => grpcBidi(targets.grpc),
    rest: () => rest(targets.httpUrl!, `r${n++}`),
    websocket: () => websocket(targets.httpUrl!.replace(/^http/, "ws") + "/"),
  };
  const protocols = PROTOCOLS.filter((p) => targets.httpUrl !== undefined || p.startsWith("grpc"));
  const loops = protocols.flatMap((p) =>
    Array.from({ length: LOOPS[p] }, async () => {
      while (!stopping) {
        const tally = current[p];
        tally.calls++;
        await call[p]().catch((err: Error) => {
          if (err.message.includes(OVERLOADED_MESSAGE)) {
            tally.shed++;
            return;
          }
          tally.failed++;
          tally.reasons[err.message] = (tally.reasons[err.message] ?? 0) + 1;
        });
        await new Promise((r) => setTimeout(r, PAUSE_MS));
      }
    }),
  );
  return {
    /** Counts from now on go to a fresh set; returns the previous one. */
    nextPhase(): Tallies {
      const done = current;
      current = emptyTallies();
      return done;
    },
    async stop(): Promise<Tallies> {
      stopping = true;
      await Promise.all(loops);
      return current;
    },
  };
}
