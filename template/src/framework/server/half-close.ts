import { constants, type Http2Session, type Http2Stream } from "node:http2";

/**
 * How long a half-close waits for the client's PING acknowledgement at most: a client that does not answer
 * is taken at its word. Far above a round trip, so only a client that never acknowledges pays it.
 */
const ROUND_TRIP_LIMIT_MS = 1000;

/** One connection's pending confirmations: the ends waiting for the PING in flight, and those for the next one. */
interface Rounds {
  inFlight: boolean;
  queued: (() => void)[];
}

const roundsOf = new WeakMap<Http2Session, Rounds>();

/**
 * Resolves once the client's frames sent before this moment have all been read: after a PING round trip on
 * its connection, then one more turn of the event loop (frames read with the acknowledgement are handled
 * before the check phase).
 *
 * Why: a grpc-js client cancels with Node's Http2Stream.close(), which ends its writable side (END_STREAM)
 * and then resets the stream (RST_STREAM). When a socket write is in progress, Node holds the reset back
 * until that write completes, so the two frames can reach the server in separate reads, from the same turn
 * to tens of milliseconds apart on a busy machine (measured out of process: 65 of 100 client-streaming
 * cancels in one read, 28 one turn apart, 7 between 16 and 1,766 turns, up to 22 ms). Nothing in the END_STREAM
 * tells the two apart, and a wait for time alone either misses the late resets or delays every real half-close.
 * The client's reset is almost always written with the acknowledgement of a PING sent after its END_STREAM, or
 * ahead of it, so once the acknowledgement is in, a cancel has shown: out of process, 300 of 300 client-streaming
 * and about 997 of 1,000 bidi cancels (the rest reset 0.4 to 5 ms after the acknowledgement: Node can hold a
 * reset issued inside the session's own callbacks until a later write completes), where two turns of the event
 * loop (the previous check) caught 60 and 94 of 100. A second round trip caught no more.
 *
 * Cost: one PING per connection in flight at a time, shared by every call whose input ended meanwhile (the
 * others wait for the next), and nothing per message. A real half-close is confirmed one round trip later
 * (~0.1 ms on loopback). Through a proxy that acknowledges PINGs itself, the wait covers the hop to the proxy only.
 */
export function afterRoundTrip(session: Http2Session | undefined): Promise<void> {
  if (session === undefined || session.destroyed || session.closed) return afterNextPoll();
  let rounds = roundsOf.get(session);
  if (rounds === undefined) roundsOf.set(session, (rounds = { inFlight: false, queued: [] }));
  const state = rounds;
  return new Promise((resolve) => {
    state.queued.push(resolve);
    if (!state.inFlight) ping(session, state);
  });
}

function ping(session: Http2Session, rounds: Rounds): void {
  const waiting = rounds.queued;
  rounds.queued = [];
  rounds.inFlight = true;
  let settled = false;
  const done = () => {
    if (settled) return;
    settled = true;
    clearTimeout(limit);
    session.off("close", done);
    rounds.inFlight = false;
    setImmediate(() => {
      for (const resolve of waiting) resolve();
    });
    if (rounds.queued.length > 0) ping(session, rounds);
  };
  const limit = setTimeout(done, ROUND_TRIP_LIMIT_MS);
  limit.unref();
  // Node drops the PING's callback when the connection closes first: the connection's end settles it.
  session.once("close", done);
  try {
    if (!session.ping(done)) done();
  } catch {
    done(); // the session is closing, or Node's limit of unanswered PINGs is reached
  }
}

/** Two turns of the event loop: what a call without a known connection waits. */
export function afterNextPoll(): Promise<void> {
  return new Promise((resolve) => setImmediate(() => setImmediate(resolve)));
}

/**
 * Whether a request stream whose input has ended was cancelled rather than half-closed: after the round trip
 * (see afterRoundTrip), a reset or the connection's loss has shown if there was one. For the HTTP port's
 * streams (Connect, gRPC-Web, NDJSON); the gRPC port asks grpc-js instead.
 */
export function endedByCancel(stream: Http2Stream): Promise<boolean> {
  return afterRoundTrip(stream.session).then(
    () => stream.destroyed || (stream.rstCode ?? constants.NGHTTP2_NO_ERROR) !== constants.NGHTTP2_NO_ERROR,
  );
}
