import { constants, type ServerHttp2Session } from "node:http2";

/** The highest stream ID: a GOAWAY carrying it tells the client to stop, yet refuses nothing it already sent. */
const ANY_STREAM = 2 ** 31 - 1;
/** How long the GOAWAY's ping may go unanswered before the connection is closed anyway (see goAway). */
const PING_ANSWER_WAIT_MS = 1000;
/** Debug data of the GOAWAY sent at the maximum age: grpc-js's and grpc-go's. */
const MAX_AGE = Buffer.from("max_age");
/** Debug data of the GOAWAY sent when the server drains before it stops. */
export const DRAINING = Buffer.from("draining");

/**
 * Asks the client to take its next calls to a new connection: grpc-go's two-step GOAWAY. The first GOAWAY refuses
 * no stream and a ping follows it; the client reads the GOAWAY before it answers the ping, so once the answer is
 * back no new call is on the way, and `close()` sends the final GOAWAY and lets the calls in flight finish.
 * grpc-js's own (max age, shutdown) closes at once, refusing the calls a client sent before it read the GOAWAY.
 * A Node client (grpc-js) itself fails the calls it had queued but not yet written when it reads a GOAWAY, and
 * may stop reading: it is not waited for beyond PING_ANSWER_WAIT_MS, and grpc-js resends those calls by itself.
 */
export function goAway(session: ServerHttp2Session, debug: Buffer): void {
  if (session.closed || session.destroyed) return;
  session.goaway(constants.NGHTTP2_NO_ERROR, ANY_STREAM, debug);
  let timer: NodeJS.Timeout | undefined;
  const close = () => {
    clearTimeout(timer);
    session.off("goaway", close);
    if (!session.closed && !session.destroyed) session.close();
  };
  timer = setTimeout(close, PING_ANSWER_WAIT_MS).unref();
  if (!session.ping(close)) close();
  // A client answering with a GOAWAY of its own sends no new call either.
  session.once("goaway", close);
}

export interface ConnectionAge {
  /** GOAWAY at this age, ±10 % (so that connections opened together do not all reconnect together); undefined: never. */
  maxAgeMs: number | undefined;
  /** Calls still running this long after the GOAWAY are cut; undefined: no limit. */
  graceMs: number | undefined;
}

/** Sends the connection GOAWAY at its maximum age, and cuts it after the grace. */
export function limitAge(session: ServerHttp2Session, { maxAgeMs, graceMs }: ConnectionAge): void {
  if (maxAgeMs === undefined) return;
  let grace: NodeJS.Timeout | undefined;
  const age = setTimeout(
    () => {
      goAway(session, MAX_AGE);
      if (graceMs !== undefined) grace = setTimeout(() => session.destroy(), graceMs).unref();
    },
    maxAgeMs * (0.9 + 0.2 * Math.random()),
  ).unref();
  session.once("close", () => {
    clearTimeout(age);
    clearTimeout(grace);
  });
}
