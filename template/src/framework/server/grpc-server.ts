import type { IncomingHttpHeaders } from "node:http";
import { type Http2Server, constants as http2Constants, type ServerHttp2Session, type ServerHttp2Stream } from "node:http2";
import { Server, ServerCredentials, type UntypedServiceImplementation } from "@grpc/grpc-js";
import { Health } from "../../gen/grpc/health/v1/health_pb.js";
import type { ServedService } from "../call/handlers.js";
import { Code, OVERLOADED_MESSAGE } from "../call/status.js";
import type { Config } from "../config/schema.js";
import { rootLogger } from "../logging/logger.js";
import type { CallKind, OverloadGuard } from "../overload/guard.js";
import type { PartialMessageBudget } from "../overload/partial-messages.js";
import { IdleConnections } from "./connection-idle.js";
import type { OnConnectionRefused } from "./connection-refusals.js";
import { type ConnectionAge, DRAINING, goAway, limitAge } from "./goaway.js";
import { GATEWAY_PATH_KEY, grpcHandler, isGatewayHop } from "./grpc-adapter.js";
import { ConnectionGuard } from "./grpc-connections.js";
import { isGrpcContentType } from "./grpc-content-type.js";
import { grpcServiceDefinition } from "./grpc-definition.js";
import { routeGrpcJsLogs } from "./grpc-js-logs.js";
import { type OnRejectedBeforeHandler, rejectionsBeforeHandler } from "./grpc-rejections.js";
import { endWithUnavailable } from "./grpc-shutdown.js";
import { enforceKeepalive, type KeepalivePolicy } from "./keepalive-policy.js";
import type { BoundMethod } from "./methods.js";
import { PeerDirectory } from "./peers.js";
import { addReflection } from "./reflection.js";
import { clampGrpcTimeout, joinRepeatedAuthorization } from "./request-headers.js";

export interface GrpcServerOptions {
  config: Config;
  services: readonly ServedService[];
  methods: readonly BoundMethod[];
  /** The standard health service (health/readiness.ts), registered beside the user's services. */
  readiness: { addToServer(server: Server): void };
  /** Told about the calls grpc-js refuses before their handler runs (undecodable, oversized requests…): the metrics count them. */
  onRejectedBeforeHandler?: OnRejectedBeforeHandler | undefined;
  /** Overload protection: counts the calls in flight and refuses new ones with UNAVAILABLE when overloaded. */
  overload?: OverloadGuard | undefined;
  /** Told of each connection refused at GRPC_MAX_CONNECTIONS: the metrics count it. */
  onConnectionRefused?: OnConnectionRefused | undefined;
  /** The process's budget of bytes in unfinished request messages (MAX_PARTIAL_MESSAGE_BYTES). */
  partialMessages?: PartialMessageBudget | undefined;
}

/**
 * Limits of the gRPC server besides the message sizes (GRPC_MAX_RECV_MSG_SIZE, GRPC_MAX_SEND_MSG_SIZE).
 * Documented in docs/configuration.md's "Limits" table.
 */
export const GRPC_LIMITS = {
  /** The server pings a connection idle this long, and closes it if no answer comes within keepaliveTimeoutMs (dead peers). */
  keepaliveTimeMs: 2 * 60 * 60 * 1000,
  keepaliveTimeoutMs: 20_000,
  /** nghttp2's memory budget per connection in MB; beyond it new streams are refused (ENHANCE_YOUR_CALM). */
  maxSessionMemoryMb: 10,
} as const;

/** The gRPC server with the user's services, standard health and (unless disabled) reflection. */
export function createGrpcServer({
  config,
  services,
  methods,
  readiness,
  onRejectedBeforeHandler,
  overload,
  onConnectionRefused,
  partialMessages,
}: GrpcServerOptions): Server {
  routeGrpcJsLogs();
  const server = new Server({
    "grpc.max_receive_message_length": config.GRPC_MAX_RECV_MSG_SIZE,
    "grpc.max_send_message_length": config.GRPC_MAX_SEND_MSG_SIZE,
    // Per connection; the gateway's own connection is lifted to GATEWAY_MAX_CONCURRENT_STREAMS (grpc-connections.ts).
    "grpc.max_concurrent_streams": config.GRPC_MAX_CONCURRENT_STREAMS,
    "grpc.keepalive_time_ms": GRPC_LIMITS.keepaliveTimeMs,
    "grpc.keepalive_timeout_ms": GRPC_LIMITS.keepaliveTimeoutMs,
    "grpc-node.max_session_memory": GRPC_LIMITS.maxSessionMemoryMb,
    // Neither the maximum age nor the idle time is grpc-js's (goaway.ts, connection-idle.ts), unless its internals
    // changed: then its own idle timeout (a client starting a call at that very moment is refused, which clients
    // retry transparently). 0 leaves the option out: off.
    "grpc.max_connection_idle_ms": canWrapHttp2Servers(Server.prototype)
      ? undefined
      : millisOrUnset(config.GRPC_SERVER_MAX_CONNECTION_IDLE_SECONDS),
    // Nothing serves channelz here; with it on, grpc-js counts every call and message for it (a tracker with
    // four closures per call, a Date.now() per message). Off only where stopGrpc can reset the connections
    // itself: grpc-js's forceShutdown finds them in its channelz bookkeeping alone.
    "grpc.enable_channelz": canWrapHttp2Servers(Server.prototype) ? 0 : 1,
    interceptors: onRejectedBeforeHandler ? [rejectionsBeforeHandler(methods, onRejectedBeforeHandler)] : [],
  });
  // With a client CA, each call's verified client certificate becomes ctx.peer.
  const peers = config.GRPC_TLS_CLIENT_CA_FILE === undefined ? undefined : new PeerDirectory();
  for (const service of services) {
    const implementation: UntypedServiceImplementation = {};
    for (const m of methods) {
      if (m.info.service === service.desc.typeName) implementation[m.info.name] = grpcHandler(m, peers);
    }
    server.addService(grpcServiceDefinition(service.desc), implementation);
  }
  wrapHttp2Servers(server, {
    age: {
      maxAgeMs: millisOrUnset(config.GRPC_SERVER_MAX_CONNECTION_AGE_SECONDS),
      graceMs: millisOrUnset(config.GRPC_SERVER_MAX_CONNECTION_AGE_GRACE_SECONDS),
    },
    keepalive: {
      minTimeMs: config.GRPC_SERVER_KEEPALIVE_MIN_TIME_SECONDS * 1000,
      permitWithoutCalls: config.GRPC_SERVER_KEEPALIVE_PERMIT_WITHOUT_CALLS,
    },
    overload,
    idleMs: millisOrUnset(config.GRPC_SERVER_MAX_CONNECTION_IDLE_SECONDS),
    streams: new Set(methods.filter((m) => m.info.kind !== "unary").map((m) => m.info.path)),
    peers,
    guard: new ConnectionGuard({
      maxConnections: config.GRPC_MAX_CONNECTIONS,
      firstMessageTimeoutMs: config.GRPC_FIRST_MESSAGE_TIMEOUT_SECONDS * 1000,
      onRefused: onConnectionRefused,
      partialMessages,
    }),
  });
  readiness.addToServer(server);
  if (!config.DISABLE_GRPC_REFLECTION) {
    addReflection(server, [...services.map((s) => s.desc), Health]);
  }
  return server;
}

type Http2ServerFactory = (credentials: ServerCredentials) => Http2Server;

/** A 'stream' listener of an HTTP/2 server (Node passes the raw header list as a fourth argument its types leave out). */
export type StreamListener = (stream: ServerHttp2Stream, headers: IncomingHttpHeaders, flags: number, rawHeaders: string[]) => void;

/** What singlePortInjector's next HTTP/2 server does besides gRPC; set only while grpc-js makes it. */
let sharing: { others: StreamListener; onSession: (session: ServerHttp2Session) => void } | undefined;

/** Each server's open HTTP/2 connections, which stopGrpc resets when it must stop at once, and its guard. */
const connections = new WeakMap<Server, Set<ServerHttp2Session>>();
const guards = new WeakMap<Server, ConnectionGuard>();

/** What wrapHttp2Servers reaches into: the grpc-js method that makes each of its HTTP/2 servers. */
interface Http2ServerMaker {
  createHttp2Server: Http2ServerFactory;
}

/** Whether grpc-js still makes its HTTP/2 servers through the method wrapHttp2Servers wraps. */
function canWrapHttp2Servers(server: object): server is Http2ServerMaker {
  return typeof (server as Partial<Http2ServerMaker>).createHttp2Server === "function";
}

/**
 * grpc-js has no public hook that runs when it makes an HTTP/2 server (TCP, TLS and the gateway's Unix socket),
 * so this wraps its `createHttp2Server`, to guard the request headers, refuse calls when overloaded and keep
 * the connections. If a grpc-js release renames it, start-up logs a warning, channelz stays on (see
 * createGrpcServer), and the tests of what the wrapper does fail.
 */
function wrapHttp2Servers(
  server: Server,
  {
    age,
    keepalive,
    overload,
    idleMs,
    streams,
    guard,
    peers,
  }: {
    age: ConnectionAge;
    keepalive: KeepalivePolicy;
    overload: OverloadGuard | undefined;
    /** GRPC_SERVER_MAX_CONNECTION_IDLE_SECONDS in ms; undefined: off. */
    idleMs: number | undefined;
    /** The paths of the streaming methods: long-lived calls, which overload protection governs less (guard.ts). */
    streams: ReadonlySet<string>;
    guard: ConnectionGuard;
    peers: PeerDirectory | undefined;
  },
): void {
  // The method is private in grpc-js's types.
  const internals: object = server;
  if (!canWrapHttp2Servers(internals)) {
    rootLogger().warn(
      "grpc-js internals changed: deadlines over 24.8 days, repeated authorization headers, clients' ping rate and overload on the gRPC port are not guarded, and connections have no maximum age; GRPC_MAX_CONNECTIONS and GRPC_FIRST_MESSAGE_TIMEOUT_SECONDS do not apply, and calls get no client certificate identity (ctx.peer)",
    );
    return;
  }
  const create = internals.createHttp2Server;
  const open = new Set<ServerHttp2Session>();
  connections.set(server, open);
  guards.set(server, guard);
  const idle = idleMs === undefined ? undefined : new IdleConnections(idleMs, overload?.release);
  internals.createHttp2Server = (credentials) => {
    const http2Server = create.call(server, credentials);
    guardStreams(http2Server, overload, streams, idle, guard);
    // After: the listener that routes by content type hands gRPC's streams to the guarded one.
    if (sharing) shareWithHttp(http2Server, sharing.others, sharing.onSession);
    guard.watch(http2Server);
    http2Server.on("session", (session: ServerHttp2Session) => {
      open.add(session);
      idle?.watch(session);
      peers?.track(session);
      limitAge(session, age);
      enforceKeepalive(session, keepalive);
      session.once("close", () => open.delete(session));
    });
    return http2Server;
  };
}

/**
 * gRPC on the HTTP port (SINGLE_PORT): grpc-js's connection injector takes the port's HTTP/2 connections, and on
 * each connection a stream whose content type is not gRPC's (gRPC-Web, Connect, REST, the operational routes) goes
 * to `others`, the HTTP port's own HTTP/2 handling: one connection may carry both. grpc-js serves whole connections
 * only, so its 'stream' listener is swapped for one that looks at the content type first.
 */
export function singlePortInjector(
  server: Server,
  others: StreamListener,
  onSession: (session: ServerHttp2Session) => void,
): ReturnType<Server["createConnectionInjector"]> {
  if (!canWrapHttp2Servers(server as object)) throw new Error("SINGLE_PORT: this grpc-js release makes its HTTP/2 servers otherwise");
  sharing = { others, onSession };
  try {
    return server.createConnectionInjector(ServerCredentials.createInsecure());
  } finally {
    sharing = undefined;
  }
}

export { isGrpcContentType };

function shareWithHttp(http2Server: Http2Server, others: StreamListener, onSession: (session: ServerHttp2Session) => void): void {
  const listeners = http2Server.listeners("stream") as StreamListener[];
  const grpc = listeners.at(-1); // grpc-js's, which it has just added
  if (listeners.length !== 1 || !grpc) throw new Error("SINGLE_PORT: grpc-js's HTTP/2 server has no single stream listener");
  http2Server.removeListener("stream", grpc);
  http2Server.on("stream", (stream: ServerHttp2Stream, headers: IncomingHttpHeaders, flags: number, rawHeaders: string[]) => {
    if (isGrpcContentType(headers["content-type"])) grpc(stream, headers, flags, rawHeaders);
    else others(stream, headers, flags, rawHeaders);
  });
  http2Server.on("session", onSession);
}

/**
 * Runs before grpc-js sees a new stream, in place of its 'stream' listener (grpc-js registers it as it makes
 * the server; one listener, not two: an emitter with two copies its list on every emit):
 *  - fixes two request headers: a `grpc-timeout` longer than a timer holds is clamped (grpc-js would expire it
 *    at once), and repeated `authorization` headers are joined (Node would keep only the first);
 *  - counts the call in flight from here (an idle stream that never sends its message counts too) until the
 *    stream closes, and refuses it with UNAVAILABLE when the process is overloaded, before grpc-js decodes
 *    anything (overload/guard.ts): a header lookup, an increment and a comparison per call;
 *  - counts the call on its connection for the idle time (connection-idle.ts), with the same close listener;
 *  - gives it to the connection guard (grpc-connections.ts: the time limit for its first message).
 * If grpc-js ever registers its listener otherwise, the headers are guarded by a listener of our own in front
 * and overload is not checked on this port (a warning says so; the overload tests fail).
 */
function guardStreams(
  http2Server: Http2Server,
  overload: OverloadGuard | undefined,
  streams: ReadonlySet<string>,
  idle: IdleConnections | undefined,
  guard: ConnectionGuard,
): void {
  const grpcListeners = http2Server.listeners("stream") as StreamListener[];
  const grpcListener = grpcListeners.length === 1 ? grpcListeners[0] : undefined;
  if (grpcListener === undefined) {
    if (overload) rootLogger().warn("grpc-js internals changed: overload protection does not cover the gRPC port");
    // Node passes the raw header list as a fourth argument its types leave out.
    http2Server.prependListener(
      "stream",
      (stream: ServerHttp2Stream, headers: IncomingHttpHeaders, _flags: number, rawHeaders: string[]) => {
        guard.admit(stream, headers);
        clampGrpcTimeout(headers);
        joinRepeatedAuthorization(headers, rawHeaders);
      },
    );
    return;
  }
  http2Server.removeListener("stream", grpcListener);
  const release = overload?.release;
  http2Server.on("stream", function guarded(this: Http2Server, stream, headers, flags, rawHeaders) {
    let counted = false;
    if (overload !== undefined) {
      // The gateway's hop carries a call its HTTP side counted already: counted once, never refused here.
      const hop = headers[GATEWAY_PATH_KEY];
      if (hop === undefined || !isGatewayHop(hop)) {
        if (++overload.inFlight > overload.limit && overload.refuse(callKind(headers, streams))) {
          refuseOverloaded(stream);
          return;
        }
        counted = true;
      }
    }
    // One close listener a stream, for whatever counts it: the connection's calls, the calls in flight.
    const calls = idle?.opened(stream);
    if (calls !== undefined) stream.on("close", counted ? calls.closedCounted : calls.closed);
    else if (counted) stream.on("close", release!);
    guard.admit(stream, headers);
    clampGrpcTimeout(headers);
    joinRepeatedAuthorization(headers, rawHeaders);
    grpcListener.call(this, stream, headers, flags, rawHeaders);
  } as StreamListener);
}

/**
 * What overload protection makes of a call over the limit (asked only then): health checks and reflection are
 * probes and tools, served however loaded the process is (and counted in flight); a streaming method is a
 * long-lived stream; anything else a call.
 */
function callKind(headers: IncomingHttpHeaders, streams: ReadonlySet<string>): CallKind {
  const path = headers[":path"];
  if (typeof path !== "string") return "call";
  if (path.startsWith("/grpc.health.v1.Health/") || path.startsWith("/grpc.reflection.")) return "exempt";
  return streams.has(path) ? "stream" : "call";
}

/** What grpc-js registers on every stream it takes; a refused one never reaches it. */
function ignore(): void {}

/**
 * A refused call: UNAVAILABLE in a trailers-only response, as grpc-js answers an unknown method. grpc-js
 * clients treat UNAVAILABLE as "try another server" (their retry policy, a load balancer's next backend).
 */
function refuseOverloaded(stream: ServerHttp2Stream): void {
  stream.on("error", ignore); // a client reset now must not be an unhandled 'error'
  if (stream.destroyed || stream.headersSent) return;
  stream.respond(
    {
      ":status": 200,
      "content-type": "application/grpc+proto",
      "grpc-status": String(Code.UNAVAILABLE),
      "grpc-message": OVERLOADED_MESSAGE,
    },
    { endStream: true },
  );
}

/** A duration setting in grpc-js's milliseconds; 0 (off) leaves the option unset. */
function millisOrUnset(seconds: number): number | undefined {
  return seconds > 0 ? Math.max(1, Math.round(seconds * 1000)) : undefined;
}

/** Ends a connection at once with the code NGHTTP2_CANCEL: Node takes a number in place of the error, which its types leave out. */
function cancel(session: ServerHttp2Session): void {
  (session.destroy as unknown as (code: number) => void).call(session, http2Constants.NGHTTP2_CANCEL);
}

/** Listens on host:port (port 0 picks one); resolves to the bound port. */
export function listenGrpc(server: Server, host: string, port: number, credentials = ServerCredentials.createInsecure()): Promise<number> {
  return new Promise((resolve, reject) => {
    server.bindAsync(`${host.includes(":") ? `[${host}]` : host}:${port}`, credentials, (err, bound) => {
      if (err) reject(new Error(`gRPC: cannot listen on ${host}:${port}: ${listenProblem(err, "GRPC_PORT")}`));
      else resolve(bound);
    });
  });
}

/** Why a listener could not bind, naming the setting to change when the port is taken. */
export function listenProblem(err: Error, variable: string): string {
  return /EADDRINUSE/.test(err.message) ? `the port is already in use (EADDRINUSE): free it or change ${variable}` : err.message;
}

/**
 * Sends every open connection GOAWAY (goaway.ts): calls in flight finish, clients take their next calls to a new
 * connection, which the listener still accepts until stopGrpc: a client that still sees this replica loses nothing.
 */
export function drainGrpc(server: Server): void {
  for (const session of connections.get(server) ?? []) goAway(session, DRAINING);
}

/** Waits for in-flight calls, refusing new ones; cancels whatever is left when `signal` aborts. */
export function stopGrpc(server: Server, signal: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    const force = () => {
      server.forceShutdown();
      // What grpc-js's forceShutdown does only with channelz on (see createGrpcServer), each call ended with a
      // status first.
      for (const session of connections.get(server) ?? []) endWithUnavailable(session, cancel);
    };
    if (signal.aborted) force();
    else signal.addEventListener("abort", force, { once: true });
    server.tryShutdown(() => {
      guards.get(server)?.close();
      signal.removeEventListener("abort", force);
      resolve();
    });
  });
}
