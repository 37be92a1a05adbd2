/**
 * A cancel is never taken for a half-close: a grpc-js client in another process cancels client-streaming (Sum)
 * and bidi (Chat) calls after a few messages, 100 of each. grpc-js cancels with Node's Http2Stream.close(),
 * which sends END_STREAM and then RST_STREAM, often in separate reads; before the server confirmed an end with
 * a PING round trip, 40 of 100 Sum cancels ran to an OK answer on a partial input (bidi: about 6 of 100).
 * Real half-closes still complete.
 */
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { once } from "node:events";
import { afterEach, test } from "node:test";
import { createClient } from "../../src/framework/index.js";
import { FixtureService } from "../gen/fixture/v1/fixture_pb.js";
import { handled } from "./support/metrics.js";
import { FIXTURE_MAIN, killServiceProcesses, type LogLine, startServiceProcess } from "./support/service-process.js";

afterEach(killServiceProcesses);

const CALLS = 100;

/** Runs support/cancel-client.ts in a process of its own; resolves once it has made its calls. */
async function cancelFromAnotherProcess(port: number, kind: "client" | "bidi"): Promise<unknown> {
  const child = spawn(process.execPath, ["--import", "tsx", "test/framework/support/cancel-client.ts", String(port), kind, String(CALLS)], {
    stdio: ["ignore", "pipe", "inherit"],
  });
  let out = "";
  child.stdout.setEncoding("utf8").on("data", (c: string) => (out += c));
  const [code] = await once(child, "exit");
  assert.equal(code, 0);
  return JSON.parse(out);
}

function codesOf(logs: LogLine[], method: string): Record<string, number> {
  const codes: Record<string, number> = {};
  for (const l of logs) {
    if (l.msg === "response time" && l.grpcMethod === `/${FixtureService.typeName}/${method}`) {
      const code = String(l.grpcCode);
      codes[code] = (codes[code] ?? 0) + 1;
    }
  }
  return codes;
}

test(
  `cancels from a grpc-js client in another process reach the handler as CANCELLED, not as the end of its input (${CALLS} client-streaming, ${CALLS} bidi)`,
  {
    timeout: 120_000,
  },
  async (t) => {
    const service = startServiceProcess(FIXTURE_MAIN);
    const { grpcPort, httpPort } = (await service.waitForLog("ready", (l) => l.msg === "ready")) as { grpcPort: number; httpPort: number };
    for (const kind of ["client", "bidi"] as const) {
      const clientSaw = await cancelFromAnotherProcess(grpcPort, kind);
      t.diagnostic(`${kind}: ${JSON.stringify(clientSaw)}`);
    }
    const httpUrl = `http://127.0.0.1:${httpPort}`;
    const client = createClient(FixtureService, `127.0.0.1:${grpcPort}`, { maxAttempts: 1 });
    t.after(() => client.close());
    // A call made after the last cancel: each cancel was logged within a round trip of its end, long before.
    await client.echo({ message: "after the cancels" });
    for (const method of ["Sum", "Chat"]) {
      const codes = codesOf(service.logs, method);
      const reached = Object.values(codes).reduce((a, b) => a + b, 0);
      t.diagnostic(`${method}: ${reached} of ${CALLS} cancels reached the handler: ${JSON.stringify(codes)}`);
      assert.ok((codes.OK ?? 0) <= CALLS / 100, `${method}: at most 1 in 100 cancels taken for a half-close: ${JSON.stringify(codes)}`);
      assert.ok((codes.Canceled ?? 0) >= reached - CALLS / 100, `${method}: ${JSON.stringify(codes)}`);
      assert.equal(await handled({ httpUrl }, method, "Canceled"), codes.Canceled, `${method}: counted as logged`);
    }

    // A real half-close is confirmed one PING round trip later (the server's PING; clients may not ping it this
    // often, GRPC_SERVER_KEEPALIVE_MIN_TIME_SECONDS), and the call completes.
    async function* values() {
      yield { value: 2n };
      yield { value: 3n };
    }
    const took: number[] = [];
    for (let i = 0; i < 20; i++) {
      const started = performance.now();
      const { sum, count } = await client.sum(values());
      took.push(performance.now() - started);
      assert.deepEqual({ sum, count }, { sum: 5n, count: 2 });
    }
    took.sort((a, b) => a - b);
    t.diagnostic(`a real half-close (two messages, end, answer): median ${took[10]!.toFixed(2)} ms a call`);
  },
);
