import type { ServerHttp2Session, ServerHttp2Stream } from "node:http2";
import { goAway } from "./goaway.js";

/** Debug data of the GOAWAY sent to an idle connection. */
const MAX_IDLE = Buffer.from("max_idle");
const CALLS = Symbol("the connection's calls");

/** One connection's calls as the idle check counts them, and the close listeners its streams get. */
export interface ConnectionCalls {
  active: number;
  /** A call opened or closed since the last check. */
  touched: boolean;
  /** A stream's close listener. */
  readonly closed: () => void;
  /** The same, for a stream overload protection counts too: it also releases that count. */
  readonly closedCounted: () => void;
}

type Watched = ServerHttp2Session & { [CALLS]?: ConnectionCalls };

/**
 * GRPC_SERVER_MAX_CONNECTION_IDLE_SECONDS, in place of grpc-js's own (`grpc.max_connection_idle_ms`). That one puts a
 * `once('close')` on every stream and, each time a connection runs out of calls (every call, one at a time), reads
 * the clock, refreshes a timer and builds a trace string with tracing off: 10 k instructions a call
 * (counted by callgrind). It also closes the connection at once, refusing a call the client is sending. Here
 * the connection's calls are counted by the one close listener a stream gets anyway (it also releases overload
 * protection's count), with no clock, and a timer per connection looks every half idle time: two looks in a row
 * that find no call open and none opened or closed between them send grpc-go's two-step GOAWAY (goaway.ts), so a
 * connection without calls goes between one and one and a half idle times after its last call.
 */
export class IdleConnections {
  readonly #checkMs: number;
  readonly #release: (() => void) | undefined;

  /** `release`: overload protection's, called for the streams it counted. */
  constructor(idleMs: number, release: (() => void) | undefined) {
    this.#checkMs = idleMs / 2;
    this.#release = release;
  }

  /** Counts a new connection's calls and checks it for idleness until it closes. */
  watch(session: ServerHttp2Session): void {
    const release = this.#release;
    const calls: ConnectionCalls = {
      active: 0,
      touched: false,
      closed: () => {
        calls.active--;
        calls.touched = true;
      },
      closedCounted: () => {
        calls.active--;
        calls.touched = true;
        release?.();
      },
    };
    (session as Watched)[CALLS] = calls;
    let quiet = 0;
    const check = setInterval(() => {
      if (calls.active > 0 || calls.touched) {
        calls.touched = false;
        quiet = 0;
      } else if (++quiet === 2) {
        clearInterval(check);
        goAway(session, MAX_IDLE);
      }
    }, this.#checkMs).unref();
    session.once("close", () => clearInterval(check));
  }

  /** A stream opened: its connection's count, for the stream's close listener (undefined if the connection is not watched). */
  opened(stream: ServerHttp2Stream): ConnectionCalls | undefined {
    const calls = (stream.session as Watched | undefined)?.[CALLS];
    if (calls !== undefined) {
      calls.active++;
      calls.touched = true;
    }
    return calls;
  }
}
