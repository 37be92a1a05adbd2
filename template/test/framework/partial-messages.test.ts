/**
 * Request messages begun and not finished are bounded in bytes across the process (MAX_PARTIAL_MESSAGE_BYTES), not
 * only in time (GRPC_FIRST_MESSAGE_TIMEOUT_SECONDS): before, a client announcing large messages and stalling
 * part-way held GRPC_MAX_CONCURRENT_STREAMS × GRPC_MAX_RECV_MSG_SIZE (~400 MB) a connection until the time limit.
 * Raw node:http2 clients against the fixture service as a process under the deployment's heap cap.
 */
import assert from "node:assert/strict";
import { once } from "node:events";
import { type ClientHttp2Session, type ClientHttp2Stream, connect as http2Connect, type IncomingHttpHeaders } from "node:http2";
import { afterEach, test } from "node:test";
import { Code } from "../../src/framework/index.js";
import { startTestServer } from "../../src/framework/testing/harness.js";
import { FixtureService } from "../gen/fixture/v1/fixture_pb.js";
import { deploymentNodeOptions } from "./deploy-files.js";
import { fixtureService } from "./fixtures/fixture-service.js";
import { FIXTURE_MAIN, killServiceProcesses, startServiceProcess } from "./support/service-process.js";
import { waitFor } from "./support/wait.js";

afterEach(killServiceProcesses);

const KIB = 1024;
/** Each call's message: an EchoRequest whose 1 MiB of padding is an unknown field (skipped, so the call succeeds). */
const PADDING = 1024 * KIB;
/** What each call sends before stalling. */
const SENT = 768 * KIB;
/** Room for three stalled calls and one of them finishing, not for a fourth stalled call. */
const BUDGET = 3 * SENT + (PADDING - SENT) + 1000;

/** A gRPC frame of EchoRequest { message: "hi" } with PADDING bytes in unknown field 100. */
function paddedEcho(): Buffer {
  const tag = Buffer.from([0xa2, 0x06]); // field 100, length-delimited
  const length: number[] = [];
  for (let n = PADDING; ; n >>>= 7) {
    if (n < 0x80) {
      length.push(n);
      break;
    }
    length.push((n & 0x7f) | 0x80);
  }
  const message = Buffer.concat([Buffer.from([0x0a, 0x02, 0x68, 0x69]), tag, Buffer.from(length), Buffer.alloc(PADDING, 0x61)]);
  const prefix = Buffer.alloc(5);
  prefix.writeUInt32BE(message.length, 1);
  return Buffer.concat([prefix, message]);
}

async function metric(httpUrl: string, series: string): Promise<number> {
  const text = await (await fetch(`${httpUrl}/metrics`)).text();
  const line = text.split("\n").find((l) => l.startsWith(`${series} `));
  assert.ok(line, `no ${series} in /metrics`);
  return Number(line.slice(series.length + 1));
}

/**
 * Asks /metrics until `series` reads `value` (the service counts the bytes as its loop gets to them); fails, rather
 * than asking forever, once `pending`, the call whose bytes are awaited, has ended.
 */
async function metricReaches(httpUrl: string, series: string, value: number, pending?: Call): Promise<void> {
  for (let last = await metric(httpUrl, series); last !== value; last = await metric(httpUrl, series)) {
    if (pending?.ended !== undefined)
      assert.fail(`${series} is ${last}, not ${value}, and the call ended with grpc-status ${pending.ended}`);
    await new Promise((r) => setImmediate(r));
  }
}

interface Call {
  stream: ClientHttp2Stream;
  status: Promise<number>;
  /** The call's grpc-status (-1 for none) once it has closed. */
  ended?: number;
}

function call(session: ClientHttp2Session): Call {
  const stream = session.request(
    { ":method": "POST", ":path": `/${FixtureService.typeName}/Echo`, "content-type": "application/grpc", te: "trailers" },
    { endStream: false },
  );
  stream.on("error", () => {});
  stream.resume();
  const result: Call = { stream, status: Promise.resolve(-1) };
  result.status = new Promise<number>((resolve) => {
    let code: number | undefined;
    const note = (headers: IncomingHttpHeaders) => {
      if (headers["grpc-status"] !== undefined) code = Number(headers["grpc-status"]);
    };
    stream.on("response", note);
    stream.on("trailers", note);
    stream.on("close", () => resolve((result.ended = code ?? -1)));
  });
  return result;
}

test(
  "calls whose unfinished messages would pass MAX_PARTIAL_MESSAGE_BYTES are refused with RESOURCE_EXHAUSTED; the calls within it complete",
  { timeout: 60_000 },
  async (t) => {
    const service = startServiceProcess(FIXTURE_MAIN, {
      NODE_OPTIONS: deploymentNodeOptions(),
      MAX_PARTIAL_MESSAGE_BYTES: String(BUDGET),
      // Only the byte budget acts here (a loaded CI machine once had a call refused by something else, and the test
      // waited for its bytes until it timed out).
      GRPC_FIRST_MESSAGE_TIMEOUT_SECONDS: "0",
      OVERLOAD_MAX_EVENT_LOOP_DELAY_MS: "0",
      OVERLOAD_MAX_EVENT_LOOP_UTILIZATION: "0",
    });
    const { grpcPort, httpPort } = (await service.waitForLog("ready", (l) => l.msg === "ready")) as { grpcPort: number; httpPort: number };
    const httpUrl = `http://127.0.0.1:${httpPort}`;
    const held = "grpc_server_partial_message_bytes";
    const shed = 'grpc_server_shed_total{reason="partial_messages"}';
    assert.equal(await metric(httpUrl, shed), 0);
    const frame = paddedEcho();
    // Over two connections: the budget is the process's, not a connection's.
    const sessions = [http2Connect(`http://127.0.0.1:${grpcPort}`), http2Connect(`http://127.0.0.1:${grpcPort}`)];
    t.after(() => {
      for (const s of sessions) s.destroy();
    });

    const stalled = [];
    for (let i = 0; i < 3; i++) {
      const c = call(sessions[i % 2]!);
      c.stream.write(frame.subarray(0, SENT));
      await metricReaches(httpUrl, held, (i + 1) * SENT, c);
      stalled.push(c);
    }
    // The fourth would pass the budget: refused, and what it sent is not held.
    const refused = call(sessions[1]!);
    refused.stream.write(frame.subarray(0, SENT));
    assert.equal(await refused.status, Code.RESOURCE_EXHAUSTED);
    assert.equal(await metric(httpUrl, shed), 1);
    assert.equal(await metric(httpUrl, held), 3 * SENT);
    // The probes answer meanwhile.
    assert.equal((await fetch(`${httpUrl}/healthcheck`)).status, 200);
    const logged = await service.waitForLog("the budget's warning", (l) => /MAX_PARTIAL_MESSAGE_BYTES/.test(String(l.msg)));
    assert.equal(logged.level, "warn");

    // The calls within the budget complete when their clients finish, giving their bytes back.
    for (const c of stalled) {
      c.stream.end(frame.subarray(SENT));
      assert.equal(await c.status, Code.OK);
    }
    assert.equal(await metric(httpUrl, held), 0);

    // A call ended by its client mid-message gives its bytes back too.
    const left = call(sessions[0]!);
    left.stream.write(frame.subarray(0, SENT));
    await metricReaches(httpUrl, held, SENT, left);
    left.stream.close();
    await once(left.stream, "close");
    await metricReaches(httpUrl, held, 0);
    assert.equal(service.child.exitCode, null, "the service is up");
  },
);

test(
  "a Connect client stream over h2c whose unfinished message would pass MAX_PARTIAL_MESSAGE_BYTES ends with resource_exhausted",
  { timeout: 30_000 },
  async (t) => {
    const server = await startTestServer([fixtureService], { MAX_PARTIAL_MESSAGE_BYTES: String(1024 * KIB) });
    const budget = server.app.partialMessages;
    const session = http2Connect(server.httpUrl);
    t.after(async () => {
      session.destroy();
      await server.close();
    });
    const open = () => {
      const stream = session.request(
        { ":method": "POST", ":path": `/${FixtureService.typeName}/Sum`, "content-type": "application/connect+proto" },
        { endStream: false },
      );
      stream.on("error", () => {});
      const chunks: Buffer[] = [];
      stream.on("data", (c: Buffer) => chunks.push(c));
      const prefix = Buffer.alloc(5);
      prefix.writeUInt32BE(900 * KIB, 1);
      stream.write(Buffer.concat([prefix, Buffer.alloc(700 * KIB)]));
      return { stream, body: once(stream, "end").then(() => Buffer.concat(chunks)) };
    };
    const first = open();
    await waitFor(() => (budget.held === 700 * KIB + 5 ? true : undefined));
    const second = open();
    const body = await second.body;
    assert.equal(body[0], 2, "an end-stream message");
    assert.equal((JSON.parse(body.subarray(5).toString()) as { error: { code: string } }).error.code, "resource_exhausted");
    assert.equal(budget.held, 700 * KIB + 5, "the refused call's bytes given back");
    first.stream.close();
    await waitFor(() => (budget.held === 0 ? true : undefined));
  },
);
