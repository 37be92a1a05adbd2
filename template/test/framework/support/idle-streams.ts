/**
 * Clients that open gRPC calls and never send a request message (the idle-stream attack), for the
 * idle-stream test and bench/idle-streams.ts. Two kinds:
 * - `holdRaw`: HTTP/2 frames written by hand over node:net, ignoring the server's SETTINGS (an attacker's
 *   client sends all its HEADERS at once, whatever the stream limit says);
 * - `holdHttp2`: Node's own HTTP/2 client, which honours the limit and queues the rest on its side.
 * Both count what the server answers: trailers-only answers (ended by the server), refused streams, GOAWAYs.
 */
import { type ClientHttp2Session, connect as http2Connect } from "node:http2";
import { connect, type Socket } from "node:net";

export const HEALTH_CHECK_PATH = "/grpc.health.v1.Health/Check";

export interface HeldStreams {
  /** Streams the server ended with a response of its own (a status), RST_STREAM refusals, GOAWAYs, connections closed by the server. */
  readonly counts: { ended: number; statuses: Record<string, number>; refused: number; resets: number; goaways: number; closed: number };
  /** Resolves once `done(counts)` holds (checked at each frame or event counted). */
  until(done: (counts: HeldStreams["counts"]) => boolean): Promise<void>;
  close(): void;
}

/** The counts, and the waiters `until` registered, checked after every change. */
function counter() {
  const counts = newCounts();
  const waiters = new Set<{ done: (c: typeof counts) => boolean; resolve: () => void }>();
  return {
    counts,
    changed: () => {
      for (const w of waiters) {
        if (w.done(counts)) {
          waiters.delete(w);
          w.resolve();
        }
      }
    },
    until: (done: (c: typeof counts) => boolean) =>
      done(counts) ? Promise.resolve() : new Promise<void>((resolve) => waiters.add({ done, resolve })),
  };
}

export const PREFACE = Buffer.from("PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n", "latin1");
export const FRAME = { DATA: 0, HEADERS: 1, RST_STREAM: 3, SETTINGS: 4, PING: 6, GOAWAY: 7 } as const;
export const FLAG = { END_STREAM: 0x1, ACK: 0x1, END_HEADERS: 0x4 } as const;

export function frame(type: number, flags: number, streamId: number, payload: Buffer): Buffer {
  const head = Buffer.alloc(9);
  head.writeUIntBE(payload.length, 0, 3);
  head[3] = type;
  head[4] = flags;
  head.writeUInt32BE(streamId, 5);
  return Buffer.concat([head, payload]);
}

/** A frame as a raw client reads it. */
export interface Frame {
  type: number;
  flags: number;
  streamId: number;
  payload: Buffer;
}

/** Calls `onFrame` for each whole frame the server sends on `socket`, however its bytes are split across reads. */
export function readFrames(socket: Socket, onFrame: (f: Frame) => void): void {
  let pending: Buffer = Buffer.alloc(0);
  socket.on("data", (chunk: Buffer) => {
    pending = pending.length === 0 ? chunk : Buffer.concat([pending, chunk]);
    while (pending.length >= 9) {
      const length = pending.readUIntBE(0, 3);
      if (pending.length < 9 + length) break;
      const payload = pending.subarray(9, 9 + length);
      onFrame({ type: pending[3]!, flags: pending[4]!, streamId: pending.readUInt32BE(5) & 0x7fffffff, payload });
      pending = pending.subarray(9 + length);
    }
  });
}

/** HPACK "literal header field without indexing, new name", no Huffman (RFC 7541 §6.2.2); short strings only. */
export function hpack(headers: [string, string][]): Buffer {
  const parts: Buffer[] = [];
  for (const [name, value] of headers) {
    if (name.length > 126 || value.length > 126) throw new Error("header too long for this encoder");
    parts.push(Buffer.from([0, name.length]), Buffer.from(name, "latin1"), Buffer.from([value.length]), Buffer.from(value, "latin1"));
  }
  return Buffer.concat(parts);
}

function requestHeaders(path: string, authority: string): [string, string][] {
  return [
    [":method", "POST"],
    [":scheme", "http"],
    [":path", path],
    [":authority", authority],
    ["content-type", "application/grpc"],
    ["te", "trailers"],
  ];
}

function newCounts(): HeldStreams["counts"] {
  return { ended: 0, statuses: {}, refused: 0, resets: 0, goaways: 0, closed: 0 };
}

/**
 * `connections` raw connections, each sending `streams` HEADERS frames (no END_STREAM, never any DATA) at once.
 * Resolves once every connection has written its frames.
 */
export async function holdRaw(port: number, connections: number, streams: number, path = HEALTH_CHECK_PATH): Promise<HeldStreams> {
  const { counts, changed, until } = counter();
  const block = hpack(requestHeaders(path, `127.0.0.1:${port}`));
  const sockets: Socket[] = [];
  const written: Promise<void>[] = [];
  for (let c = 0; c < connections; c++) {
    const socket = connect(port, "127.0.0.1");
    sockets.push(socket);
    socket.on("error", () => {});
    socket.on("close", () => {
      counts.closed++;
      changed();
    });
    readFrames(socket, ({ type, flags, payload }) => {
      if (type === FRAME.SETTINGS && (flags & FLAG.ACK) === 0) socket.write(frame(FRAME.SETTINGS, FLAG.ACK, 0, Buffer.alloc(0)));
      else if (type === FRAME.PING && (flags & FLAG.ACK) === 0) socket.write(frame(FRAME.PING, FLAG.ACK, 0, payload));
      else if (type === FRAME.HEADERS && (flags & FLAG.END_STREAM) !== 0) counts.ended++;
      else if (type === FRAME.RST_STREAM) {
        if (payload.readUInt32BE(0) === 7) counts.refused++;
        else counts.resets++;
      } else if (type === FRAME.GOAWAY) counts.goaways++;
    });
    // After the frames of a read are counted.
    socket.on("data", changed);
    const frames: Buffer[] = [PREFACE, frame(FRAME.SETTINGS, 0, 0, Buffer.alloc(0))];
    for (let i = 0; i < streams; i++) frames.push(frame(FRAME.HEADERS, FLAG.END_HEADERS, 1 + 2 * i, block));
    written.push(new Promise((resolve) => socket.write(Buffer.concat(frames), () => resolve())));
  }
  await Promise.all(written);
  return {
    counts,
    until,
    close: () => {
      for (const s of sockets) s.destroy();
    },
  };
}

/**
 * `connections` connections of Node's HTTP/2 client, each opening `streams` calls that send headers and
 * nothing else. Node queues the calls beyond the server's stream limit on the client's side.
 */
export function holdHttp2(port: number, connections: number, streams: number, path = HEALTH_CHECK_PATH): HeldStreams {
  const { counts, changed, until } = counter();
  const sessions: ClientHttp2Session[] = [];
  for (let c = 0; c < connections; c++) {
    const session = http2Connect(`http://127.0.0.1:${port}`);
    sessions.push(session);
    session.on("error", () => {});
    session.on("goaway", () => {
      counts.goaways++;
      changed();
    });
    session.on("close", () => {
      counts.closed++;
      changed();
    });
    const headers = Object.fromEntries(requestHeaders(path, `127.0.0.1:${port}`).filter(([k]) => k !== ":scheme" && k !== ":authority"));
    for (let i = 0; i < streams; i++) {
      const stream = session.request(headers, { endStream: false });
      stream.on("error", () => {});
      stream.on("response", (h) => {
        counts.ended++;
        const status = String(h["grpc-status"]);
        counts.statuses[status] = (counts.statuses[status] ?? 0) + 1;
        changed();
      });
      stream.on("close", () => {
        if (stream.rstCode === 7) counts.refused++;
        changed();
      });
    }
  }
  return {
    counts,
    until,
    close: () => {
      for (const s of sessions) s.destroy();
    },
  };
}

/** The process's resident set now and at its peak, in MB (Linux: /proc/<pid>/status). */
export async function rssOf(pid: number): Promise<{ rssMb: number; peakMb: number }> {
  const { readFile } = await import("node:fs/promises");
  const status = await readFile(`/proc/${pid}/status`, "utf8");
  const kb = (field: string) => Number(new RegExp(`^${field}:\\s+(\\d+) kB`, "m").exec(status)?.[1] ?? Number.NaN);
  return { rssMb: kb("VmRSS") / 1024, peakMb: kb("VmHWM") / 1024 };
}
