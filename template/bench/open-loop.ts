// An open-loop gRPC load generator: calls arrive at a fixed rate whatever the server does, as a service's
// callers do, where h2load (and ghz) keep a fixed number of calls outstanding and so slow down with the server
// (a closed loop never offers more than the server takes, so it cannot show overload). h2load's --rps only
// paces each connection's requests within its -m streams, which still closes the loop at -m.
//
// Hand-written over node:http2 rather than grpc-js: the generator must offer twice what the server takes, on
// one CPU, and a grpc-js client costs more per call than the server does. Each call is a prebuilt Echo frame
// (lib.ts's, or one with work_us); its gRPC status comes from the trailers (or a trailers-only answer), since the HTTP
// status of a refused call is 200 too. Latency is measured from the moment the call was due, not from when it
// was sent: a generator that falls behind must not hide the wait (coordinated omission).

import { readFileSync } from "node:fs";
import http2 from "node:http2";
import { ECHO_PATH, GRPC_BODY } from "./lib.js";

export interface OpenLoopResult {
  /** Calls/s the generator actually sent (below the target when it could not keep up). */
  offered: number;
  sent: number;
  /** Calls answered OK, and those within the run's window (goodput = okInWindow / seconds). */
  ok: number;
  goodput: number;
  /** Answered UNAVAILABLE (refused by overload protection), DEADLINE_EXCEEDED, anything else (incl. resets). */
  unavailable: number;
  deadlineExceeded: number;
  otherErrors: number;
  /** Still unanswered when the grace period after the run ended. */
  unfinished: number;
  /** Latency of the OK calls, ms, from the moment each was due. */
  p50: number;
  p99: number;
  max: number;
  /** Per second of the run, by when the calls were due: OK calls, refused calls and the p99 of the OK ones (ms). */
  timeline: { ok: number; refused: number; p99: number }[];
  /** The run's first second by tenths, as `timeline` (max instead of p99): how soon the server reacted. */
  firstSecond: { ok: number; refused: number; max: number }[];
}

export interface OpenLoopOptions {
  port: number;
  /** Calls per second. */
  rate: number;
  seconds: number;
  connections?: number;
  /** Each call's `grpc-timeout`, ms (callers have deadlines; the server ends late calls with DEADLINE_EXCEEDED). */
  deadlineMs?: number;
  /** How long to wait for the last calls after the run. */
  graceMs?: number;
  /** The file with the gRPC frame each call sends (default: the bench's Echo request). */
  body?: string;
}

const TICK_MS = 1;

export async function openLoop({
  port,
  rate,
  seconds,
  connections = 16,
  deadlineMs = 2000,
  graceMs = 3000,
  body = GRPC_BODY,
}: OpenLoopOptions): Promise<OpenLoopResult> {
  const frame = readFileSync(body);
  const sessions = await Promise.all(
    Array.from(
      { length: connections },
      () =>
        new Promise<http2.ClientHttp2Session>((resolve, reject) => {
          const s = http2.connect(`http://127.0.0.1:${port}`);
          s.once("connect", () => resolve(s));
          s.once("error", reject);
        }),
    ),
  );
  for (const s of sessions) s.on("error", () => {});
  const headers = {
    ":method": "POST",
    ":path": ECHO_PATH,
    "content-type": "application/grpc",
    te: "trailers",
    "grpc-timeout": `${deadlineMs}m`,
  };
  const latencies: number[] = [];
  const okDue: number[] = [];
  const refusedDue: number[] = [];
  let sent = 0;
  let done = 0;
  let ok = 0;
  let okInWindow = 0;
  let unavailable = 0;
  let deadlineExceeded = 0;
  let otherErrors = 0;
  const start = performance.now();
  const end = start + seconds * 1000;
  const interval = 1000 / rate;

  const send = (due: number): void => {
    const stream = sessions[sent % connections]!.request(headers);
    let status: string | undefined;
    stream.on("response", (h) => {
      const s = h["grpc-status"];
      if (s !== undefined) status = String(s);
    });
    stream.on("trailers", (t) => {
      const s = t["grpc-status"];
      if (s !== undefined) status = String(s);
    });
    stream.on("error", () => {});
    stream.on("close", () => {
      done++;
      const now = performance.now();
      if (status === "0") {
        ok++;
        if (now <= end) okInWindow++;
        latencies.push(now - due);
        okDue.push(due);
      } else if (status === "14") {
        unavailable++;
        refusedDue.push(due);
      } else if (status === "4") deadlineExceeded++;
      else otherErrors++;
    });
    stream.resume();
    stream.end(frame);
  };

  await new Promise<void>((resolve) => {
    const timer = setInterval(() => {
      const now = performance.now();
      const due = Math.min(Math.floor((Math.min(now, end) - start) / interval), Math.floor(seconds * rate));
      for (; sent < due; sent++) send(start + sent * interval);
      if (now >= end) {
        clearInterval(timer);
        resolve();
      }
    }, TICK_MS);
  });
  const sentAt = performance.now();
  const offered = sent / ((sentAt - start) / 1000);
  const graceEnd = performance.now() + graceMs;
  while (done < sent && performance.now() < graceEnd) await new Promise((r) => setTimeout(r, 20));
  const unfinished = sent - done;
  for (const s of sessions) s.destroy();
  const timeline = Array.from({ length: Math.ceil(seconds) }, (_, i) => {
    const inSecond = (due: number) => Math.floor((due - start) / 1000) === i;
    const lat = Float64Array.from(latencies.filter((_, j) => inSecond(okDue[j]!))).sort();
    return {
      ok: lat.length,
      refused: refusedDue.filter(inSecond).length,
      p99: lat[Math.min(lat.length - 1, Math.floor(0.99 * lat.length))] ?? Number.NaN,
    };
  });
  const firstSecond = Array.from({ length: 10 }, (_, i) => {
    const inTenth = (due: number) => Math.floor((due - start) / 100) === i;
    const lat = latencies.filter((_, j) => inTenth(okDue[j]!));
    return { ok: lat.length, refused: refusedDue.filter(inTenth).length, max: lat.length > 0 ? Math.max(...lat) : Number.NaN };
  });
  const sorted = Float64Array.from(latencies).sort();
  const at = (q: number) => sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))] ?? Number.NaN;
  return {
    offered,
    sent,
    ok,
    goodput: okInWindow / seconds,
    unavailable,
    deadlineExceeded,
    otherErrors,
    unfinished,
    p50: at(0.5),
    p99: at(0.99),
    max: sorted.length > 0 ? sorted[sorted.length - 1]! : Number.NaN,
    timeline,
    firstSecond,
  };
}
