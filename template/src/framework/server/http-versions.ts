import type { IncomingMessage, Server, ServerResponse } from "node:http";
import {
  createServer as createHttp2Server,
  type Http2Server,
  type Http2ServerRequest,
  type Http2ServerResponse,
  type ServerHttp2Session,
} from "node:http2";
import type { Socket } from "node:net";
import { createServer as createTlsServer, type TLSSocket, type Server as TlsServer } from "node:tls";
import { type Http2TimeoutLimits, Http2Timeouts } from "./http2-timeouts.js";

/** What every HTTP/2 connection sends first (RFC 9113 §3.4); an HTTP/1.x request line never starts so. */
const PREFACE = Buffer.from("PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n");

/** Limits of HTTP/2 on the HTTP port, beside HTTP_LIMITS (HTTP/1.1). */
export const HTTP2_LIMITS = {
  /** Concurrent requests per connection (more are refused with REFUSED_STREAM until one ends). */
  maxConcurrentStreams: 100,
  /** nghttp2's memory budget per connection in MB; beyond it new streams are refused (ENHANCE_YOUR_CALM). */
  maxSessionMemoryMb: 10,
  /** Request headers in bytes, as HTTP_LIMITS.maxHeaderSize for HTTP/1.1. */
  maxHeaderListSize: 16_384,
  /** A connection with no stream open this long is closed (GOAWAY), as HTTP/1.1's keep-alive timeout. */
  idleTimeoutMs: 72_000,
  /** A connection must send its first bytes (or finish its TLS handshake) within this, else it is closed. */
  firstBytesTimeoutMs: 10_000,
} as const;

/** The certificate and key of TLS on the HTTP port (HTTP_TLS_CERT_FILE, HTTP_TLS_KEY_FILE). */
export interface HttpTlsFiles {
  cert: Buffer;
  key: Buffer;
}

type Handler = (req: IncomingMessage, res: ServerResponse) => void;

/**
 * The HTTP/2 side of the HTTP port. Its connections go to `server` unless `serveConnection` is replaced
 * (SINGLE_PORT gives them to grpc-js, which hands the streams that are not gRPC back to `server`).
 */
export interface Http2Side {
  /** Serves HTTP/2 requests with the same handler as HTTP/1.1 (Node's compatibility API). */
  readonly server: Http2Server;
  /** Takes an HTTP/2 connection (cleartext past the preface check, or TLS with ALPN h2). */
  serveConnection: (socket: Socket | TLSSocket) => void;
  /** Open HTTP/2 connections of the port, whoever serves them: closing sends each a GOAWAY. */
  readonly sessions: Set<ServerHttp2Session>;
  /**
   * Connections whose version is not known yet (no bytes yet, or mid-handshake), with the sweep at which they
   * arrived: the sweep (once a second) and closing destroy them.
   */
  readonly pending: Map<Socket, number>;
  /** The sweep of `pending`, running while it holds a connection, and how many times it has run. */
  sweep: NodeJS.Timeout | undefined;
  sweeps: number;
  /** Set by closeHttp2Side: new connections are refused. */
  closing: boolean;
  /** The header and request timeouts of the port's own HTTP/2 requests. */
  readonly timeouts: Http2Timeouts;
  /** The TLS server in front (HTTP_TLS_*): its setSecureContext puts reloaded certificate files in use. */
  tls?: TlsServer;
}

/**
 * Makes an HTTP/1.1 server's port speak HTTP/2 too. Node's http2 `allowHTTP1` works only with TLS, so without
 * TLS the first bytes of each connection tell the versions apart: the HTTP/2 preface goes to an HTTP/2 server,
 * anything else to the HTTP/1.1 server's own connection handling (the bytes read are put back first). With
 * `tls`, the handshake's ALPN (h2, http/1.1) decides instead. The HTTP/1.1 server keeps listening, closing and
 * its timeouts; `http1` is told of each connection it takes (after TLS, the TLS socket).
 */
export function serveBothVersions(
  server: Server,
  handler: Handler,
  options: { tls?: HttpTlsFiles | undefined; http1: (socket: Socket) => void; timeouts: Http2TimeoutLimits },
): Http2Side {
  const [http1Listener] = server.listeners("connection") as ((socket: Socket) => void)[];
  if (server.listenerCount("connection") !== 1 || !http1Listener) throw new Error("the HTTP/1.1 server has no single connection listener");
  server.removeListener("connection", http1Listener);
  const toHttp1 = (socket: Socket): void => {
    options.http1(socket);
    http1Listener.call(server, socket);
  };
  const timeouts = new Http2Timeouts(options.timeouts);
  // A function of its own for HTTP/2, so that HTTP/1.1's requests pass no version check.
  const http2Handler = (req: Http2ServerRequest, res: Http2ServerResponse): void => {
    timeouts.arrived(req, res);
    handler(req as unknown as IncomingMessage, res as unknown as ServerResponse);
  };
  const http2 = createHttp2Server(
    {
      maxSessionMemory: HTTP2_LIMITS.maxSessionMemoryMb,
      settings: { maxConcurrentStreams: HTTP2_LIMITS.maxConcurrentStreams, maxHeaderListSize: HTTP2_LIMITS.maxHeaderListSize },
    },
    http2Handler,
  );
  const side: Http2Side = {
    timeouts,
    server: http2,
    serveConnection: (socket) => http2.emit("connection", socket),
    sessions: new Set(),
    pending: new Map(),
    sweep: undefined,
    sweeps: 0,
    closing: false,
  };
  http2.on("session", (session: ServerHttp2Session) => trackSession(side, session));
  const { pending } = side;
  const settled = (socket: Socket): void => {
    pending.delete(socket);
    socket.removeListener("error", onPendingError);
  };
  if (options.tls) {
    const tls = createTlsServer({
      cert: options.tls.cert,
      key: options.tls.key,
      ALPNProtocols: ["h2", "http/1.1"],
      handshakeTimeout: HTTP2_LIMITS.firstBytesTimeoutMs,
    });
    side.tls = tls;
    tls.on("secureConnection", (socket: TLSSocket) => {
      const raw = (socket as TLSSocket & { _parent?: Socket })._parent;
      if (raw) pending.delete(raw);
      if (socket.alpnProtocol === "h2") side.serveConnection(socket);
      else toHttp1(socket); // http/1.1, or a client without ALPN
    });
    // A failed handshake (bad client, timeout): the TLS server has destroyed the socket already.
    tls.on("tlsClientError", () => {});
    server.on("connection", (socket: Socket) => {
      if (side.closing) {
        socket.destroy();
        return;
      }
      holdPending(side, socket);
      tls.emit("connection", socket);
    });
  } else {
    server.on("connection", (socket: Socket) => {
      if (side.closing) {
        socket.destroy();
        return;
      }
      holdPending(side, socket);
      socket.on("error", onPendingError);
      let seen: Buffer | undefined;
      const onData = (chunk: Buffer): void => {
        const data = seen ? Buffer.concat([seen, chunk]) : chunk;
        const n = Math.min(data.length, PREFACE.length);
        const h2 = data.compare(PREFACE, 0, n, 0, n) === 0;
        if (h2 && n < PREFACE.length) {
          seen = data; // a prefix of the preface so far
          return;
        }
        socket.removeListener("data", onData);
        settled(socket);
        socket.pause();
        socket.unshift(data);
        if (h2) {
          // The HTTP/1.1 server's sockets stay half-open after the client's FIN; an HTTP/2 client that sends
          // one is gone (no more frames, not even a PING's acknowledgement), so the session ends with it, as
          // on Node's own HTTP/2 server.
          socket.allowHalfOpen = false;
          side.serveConnection(socket);
        } else {
          toHttp1(socket);
          socket.resume();
        }
      };
      socket.on("data", onData);
    });
  }
  return side;
}

/** Sweeps of `pending` a connection may wait through for its first bytes (or its handshake). */
const FIRST_BYTES_SWEEPS = HTTP2_LIMITS.firstBytesTimeoutMs / 1000;

/**
 * Puts a new connection in `pending`. One sweep a second, rather than a timer per connection: a connection costs a
 * map entry, and one that sends nothing is closed after firstBytesTimeoutMs (to a second).
 */
function holdPending(side: Http2Side, socket: Socket): void {
  side.pending.set(socket, side.sweeps);
  side.sweep ??= setInterval(() => sweepPending(side), 1000).unref();
}

function sweepPending(side: Http2Side): void {
  side.sweeps++;
  for (const [socket, since] of side.pending) {
    if (socket.destroyed) side.pending.delete(socket);
    else if (side.sweeps - since >= FIRST_BYTES_SWEEPS) {
      side.pending.delete(socket);
      socket.destroy();
    }
  }
  if (side.pending.size === 0) {
    clearInterval(side.sweep);
    side.sweep = undefined;
  }
}

function onPendingError(this: Socket): void {
  this.destroy();
}

/**
 * Keeps an HTTP/2 connection in `side.sessions` while open, closing it (GOAWAY) once idle for idleTimeoutMs and
 * checking it for a header block that never ends (Http2Timeouts) unless `idle` is false (gRPC's connections on
 * the single port: grpc-js's settings govern them, as on the gRPC port, whose streams never reach this side's handler).
 */
export function trackSession(side: Http2Side, session: ServerHttp2Session, idle = true): void {
  if (side.closing) session.close();
  side.sessions.add(session);
  session.once("close", () => side.sessions.delete(session));
  if (idle) {
    session.setTimeout(HTTP2_LIMITS.idleTimeoutMs, () => session.close());
    side.timeouts.watch(session);
  }
}

/** Closing: connections not yet sorted are destroyed, HTTP/2 ones get a GOAWAY (their open streams finish). */
export function closeHttp2Side(side: Http2Side): void {
  side.closing = true;
  for (const socket of side.pending.keys()) socket.destroy();
  side.pending.clear();
  clearInterval(side.sweep);
  side.sweep = undefined;
  for (const session of side.sessions) session.close();
}
