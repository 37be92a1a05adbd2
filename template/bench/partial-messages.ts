// Calls that send part of their first message and stall: how much memory CONNECTIONS × STREAMS such calls hold
// until GRPC_FIRST_MESSAGE_TIMEOUT_SECONDS ends them, and whether it comes back. Each call (Node's HTTP/2 client,
// loopback) sends a message prefix announcing GRPC_MAX_RECV_MSG_SIZE bytes and then SENT_KB of them, and stops.
// The fixture service runs from source under the deployment's heap cap; its RSS (/proc) and V8's heap and
// external memory (/metrics) are sampled every second until the calls have ended and SETTLE_S seconds more.
//
//   node --import tsx bench/partial-messages.ts [KEY=VALUE…]        # settings for the service
//   PARTIAL_CONNECTIONS=4 PARTIAL_STREAMS=100 PARTIAL_SENT_KB=1024 node --import tsx bench/partial-messages.ts
//
// Its figures are in BENCHMARKS.md ("Idle calls and cancels on the gRPC port").

import { type ClientHttp2Session, connect as http2Connect } from "node:http2";
import { setTimeout as pause } from "node:timers/promises";
import { deploymentNodeOptions } from "../test/framework/deploy-files.js";
import { rssOf } from "../test/framework/support/idle-streams.js";
import { FIXTURE_MAIN, killServiceProcesses, startServiceProcess } from "../test/framework/support/service-process.js";
import { FixtureService } from "../test/gen/fixture/v1/fixture_pb.js";

const CONNECTIONS = Number(process.env.PARTIAL_CONNECTIONS ?? 4);
const STREAMS = Number(process.env.PARTIAL_STREAMS ?? 100);
const SENT_KB = Number(process.env.PARTIAL_SENT_KB ?? 1024);
const SETTLE_S = Number(process.env.PARTIAL_SETTLE_S ?? 20);
const ANNOUNCED = 4 * 1024 * 1024;

const settings = Object.fromEntries(
  process.argv
    .slice(2)
    .filter((a) => a.includes("="))
    .map((a) => a.split("=", 2) as [string, string]),
);
const service = startServiceProcess(FIXTURE_MAIN, { NODE_OPTIONS: deploymentNodeOptions(), ...settings });
const sessions: ClientHttp2Session[] = [];
try {
  const { grpcPort, httpPort } = (await service.waitForLog("ready", (l) => l.msg === "ready")) as { grpcPort: number; httpPort: number };
  const pid = service.child.pid!;
  const sample = async (label: string | number) => {
    const text = await (await fetch(`http://127.0.0.1:${httpPort}/metrics`)).text();
    const mb = (name: string) => Math.round(Number(new RegExp(`^${name} (\\S+)$`, "m").exec(text)?.[1]) / 2 ** 20);
    const row = {
      at: label,
      rssMb: Math.round((await rssOf(pid)).rssMb),
      heapUsedMb: mb("nodejs_heap_size_used_bytes"),
      externalMb: mb("nodejs_external_memory_bytes"),
      ended,
    };
    console.log(JSON.stringify(row));
  };
  let ended = 0;
  await sample("before");
  const prefix = Buffer.alloc(5);
  prefix.writeUInt32BE(ANNOUNCED, 1);
  const body = Buffer.concat([prefix, Buffer.alloc(SENT_KB * 1024, 0x61)]);
  const started = performance.now();
  for (let c = 0; c < CONNECTIONS; c++) {
    const session = http2Connect(`http://127.0.0.1:${grpcPort}`);
    session.on("error", () => {});
    sessions.push(session);
    for (let s = 0; s < STREAMS; s++) {
      const stream = session.request(
        { ":method": "POST", ":path": `/${FixtureService.typeName}/Echo`, "content-type": "application/grpc", te: "trailers" },
        { endStream: false },
      );
      stream.on("error", () => {});
      stream.on("close", () => ended++);
      stream.resume();
      stream.write(body);
    }
  }
  for (let second = 1; ended < CONNECTIONS * STREAMS && second <= 120; second++) {
    await pause(1000);
    await sample(second);
  }
  console.log(JSON.stringify({ allEndedAfterS: Math.round((performance.now() - started) / 100) / 10 }));
  for (const s of sessions) s.destroy();
  for (let second = 1; second <= SETTLE_S; second++) {
    await pause(1000);
    if (second % 5 === 0) await sample(`settled ${second} s`);
  }
  console.log(
    JSON.stringify({
      connections: CONNECTIONS,
      streams: STREAMS,
      sentKb: SENT_KB,
      settings,
      peakRssMb: Math.round((await rssOf(pid)).peakMb),
    }),
  );
} finally {
  for (const s of sessions) s.destroy();
  await killServiceProcesses();
}
