import type { WebSocket } from "ws";

/**
 * How often every open call socket is pinged. A socket that has not answered the previous ping by the
 * next sweep is gone (a half-open TCP connection: a closed laptop lid, a dropped network), so a call
 * is ended at most two intervals after its client vanished instead of holding its handler until shutdown.
 * Browsers answer pings on their own; no page code is involved.
 */
export const KEEPALIVE_MS = 30_000;

/** A socket the keepalive watches, and what to do once it stops answering. */
export interface Watched {
  readonly ws: WebSocket;
  /** Called once, when the socket missed a pong: terminate it and end its call. */
  lost(): void;
}

const running = new Set<Keepalive>();

/**
 * Pings every watched socket once per interval with one timer per server, not one per socket (the ws
 * library's heartbeat pattern): per socket it costs one `pong` listener at the upgrade and a flag.
 */
export class Keepalive {
  /** Each socket, and whether it answered since the last sweep. */
  readonly #answered = new Map<Watched, boolean>();
  readonly #timer: NodeJS.Timeout;

  constructor(intervalMs = KEEPALIVE_MS) {
    this.#timer = setInterval(() => this.sweep(), intervalMs).unref();
    running.add(this);
  }

  watch(watched: Watched): void {
    this.#answered.set(watched, true);
    watched.ws.on("pong", () => {
      if (this.#answered.has(watched)) this.#answered.set(watched, true);
    });
  }

  unwatch(watched: Watched): void {
    this.#answered.delete(watched);
  }

  /** Ends the sockets that missed the last ping, and pings the others. */
  sweep(): void {
    for (const [watched, answered] of this.#answered) {
      // A paused socket (flow control: its handler reads slowly) reads no pong either: it is not judged.
      if (watched.ws.isPaused) continue;
      if (!answered) {
        this.#answered.delete(watched);
        watched.lost();
        continue;
      }
      this.#answered.set(watched, false);
      watched.ws.ping();
    }
  }

  stop(): void {
    clearInterval(this.#timer);
    running.delete(this);
  }
}

/** Runs a sweep of every running keepalive now, as its timer would (tests: no waiting on the interval). */
export function sweepKeepalivesNow(): void {
  for (const keepalive of running) keepalive.sweep();
}
