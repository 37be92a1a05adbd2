import { constants, type ServerHttp2Session } from "node:http2";

/**
 * How often a client may ping, as grpc-go's `keepalive.EnforcementPolicy`. grpc-js's server has no such
 * policy (it only sends pings of its own), so this follows grpc-go's `handlePing`: a ping sooner than the
 * allowed interval after the previous one, with nothing but ping answers sent back in between, is a strike;
 * the third strike gets GOAWAY ENHANCE_YOUR_CALM "too_many_pings" (grpc-js and grpc-go clients then double
 * their keepalive interval and reconnect).
 */
export interface KeepalivePolicy {
  /** The shortest interval between two pings with nothing sent back between them; 0 allows any. */
  minTimeMs: number;
  /** false: every ping while the connection has no call counts as a strike (one every two hours is allowed). */
  permitWithoutCalls: boolean;
}

/** grpc-go's maxPingStrikes: the strike after it gets GOAWAY. */
const MAX_STRIKES = 2;
/** A PING ACK frame: 9 bytes of frame header and 8 of payload. */
const PING_ACK_BYTES = 17;
/** grpc-go's interval for pings without calls when they are not permitted. */
const PING_WITHOUT_CALLS_MS = 2 * 60 * 60 * 1000;
/** The debug data grpc-js and grpc-go clients look for to slow their keepalive down. */
const TOO_MANY_PINGS = Buffer.from("too_many_pings");

/** Judges the pings of one connection by `policy`. No per-call work unless pings without calls are refused. */
export function enforceKeepalive(session: ServerHttp2Session, policy: KeepalivePolicy): void {
  if (policy.minTimeMs === 0 && policy.permitWithoutCalls) return;
  let calls = 0;
  if (!policy.permitWithoutCalls) {
    session.on("stream", (stream) => {
      calls++;
      stream.once("close", () => calls--);
    });
  }
  let lastPingAt = Number.NEGATIVE_INFINITY;
  let strikes = 0;
  // grpc-go forgives the strikes once it sends headers or data. Node reports no frames sent, so this reads the
  // bytes written to the connection: more than the answers to the pings before this one means a response went
  // out. The answers owed are counted, so that pings sent in bursts (answered together) are not taken for one.
  let written = 0;
  let owed = 0;
  session.on("ping", () => {
    const now = performance.now();
    const total = session.socket?.bytesWritten ?? written;
    const sent = total - written;
    written = total;
    const answered = sent > owed * PING_ACK_BYTES;
    owed = answered ? 1 : owed - Math.floor(sent / PING_ACK_BYTES) + 1;
    const since = now - lastPingAt;
    lastPingAt = now;
    if (answered) {
      strikes = 0;
      return;
    }
    const allowedMs = calls === 0 && !policy.permitWithoutCalls ? PING_WITHOUT_CALLS_MS : policy.minTimeMs;
    if (since < allowedMs && ++strikes > MAX_STRIKES) tooManyPings(session);
  });
}

/** GOAWAY with "too_many_pings": calls in flight finish; a client that keeps pinging after it is cut. */
function tooManyPings(session: ServerHttp2Session): void {
  if (session.destroyed) return;
  if (session.closed) {
    session.destroy();
    return;
  }
  session.goaway(constants.NGHTTP2_ENHANCE_YOUR_CALM, 0, TOO_MANY_PINGS);
  session.close();
}
