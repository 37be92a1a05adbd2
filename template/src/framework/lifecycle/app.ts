import { setTimeout as sleep } from "node:timers/promises";
import type { DescService } from "@bufbuild/protobuf";
import type { Server } from "@grpc/grpc-js";
import type { FastifyInstance } from "fastify";
import pino, { type Logger } from "pino";
import { registerOpsRoutes } from "../admin/routes.js";
import { type RemoteKeySet, remoteKeySet } from "../auth/remote-keys.js";
import { registerBrowserProtocols } from "../browser/connect.js";
import { CorsPolicy, corsSettings, registerCors } from "../browser/cors.js";
import { registerWebSockets } from "../browser/websocket.js";
import { Chain, type NamedInterceptor } from "../call/chain.js";
import { type Client, type ClientOptions, createClient } from "../client/client.js";
import { configLine, gatewayMode, loadConfig } from "../config/load.js";
import type { Config } from "../config/schema.js";
import { createReporter, type ErrorReporter } from "../errors/reporter.js";
import { detailTypes } from "../errors/wire.js";
import { registerGateway } from "../gateway/gateway.js";
import { grpcInvoker, type Invoker, inProcessInvoker } from "../gateway/invoker.js";
import { Marshalers } from "../gateway/marshalers.js";
import { compileRoutes } from "../gateway/routes.js";
import { buildInfo, readPackageJson } from "../health/build-info.js";
import { Readiness } from "../health/readiness.js";
import { registerHealthRoutes } from "../health/routes.js";
import { grpcMetrics } from "../interceptors/metrics.js";
import { HttpStreams } from "../interceptors/shutdown-streams.js";
import { configureLogging, flushLogs } from "../logging/logger.js";
import { createServerMetrics, type ServerMetrics } from "../metrics/server-metrics.js";
import { OverloadGuard } from "../overload/guard.js";
import { PartialMessageBudget } from "../overload/partial-messages.js";
import { routeGrpcJsLogs } from "../server/grpc-js-logs.js";
import { createGrpcServer, drainGrpc, listenGrpc, listenProblem, singlePortInjector, stopGrpc } from "../server/grpc-server.js";
import { closeAfterEachResponse } from "../server/http-drain.js";
import { createHttpServer, http2SideOf } from "../server/http-server.js";
import { trackSession } from "../server/http-versions.js";
import { bindMethods } from "../server/methods.js";
import { loadGrpcTls, loadHttpTls, type WatchedTlsFiles } from "../server/tls.js";
import { bindUnixSocket, type UnixSocket } from "../server/unix-socket.js";
import { setupTracing, type Tracing, tracingEnabled } from "../tracing/setup.js";
import { Workers } from "../workers/supervisor.js";
import { defaultInterceptors } from "./default-chain.js";
import type { HookName, LifecycleHooks } from "./hooks.js";
import type { ServiceImpl } from "./service.js";
import { serviceUrls } from "./urls.js";

/** How long after ready the after-ready tasks wait: the first readiness probe and calls go first. */
const AFTER_READY_DELAY_MS = 100;
/** How long the HTTP calls ended at the shutdown budget have to write their status (as the gRPC port's FLUSH_MS). */
const STREAM_FLUSH_MS = 250;

export interface AppOptions {
  services: ServiceImpl[];
  /** Defaults to the configuration read from the environment. */
  config?: Config;
  /** Replaces the logger's destination (tests capture log lines with it). */
  logDestination?: Parameters<typeof configureLogging>[0]["destination"];
}

export interface Addresses {
  grpcPort: number;
  httpPort: number;
  /** `http://host:port` of the HTTP server. */
  httpUrl: string;
  /** `http://host:port` of the admin server, when ADMIN_PORT is set. */
  adminUrl: string | undefined;
}

/**
 * One service process: the chain, the gRPC and HTTP servers, readiness and the
 * ordered start-up and shutdown.
 */
export class App {
  readonly config: Config;
  readonly log: Logger;
  readonly readiness: Readiness;
  /** Gateway extensions: `app.gateway.registerMarshaler("text/event-stream", m)` from preStart replaces the SSE framing. */
  readonly gateway: Marshalers;
  /** The Prometheus registry and series (`metrics.registry` takes the service's own metrics); undefined when DISABLE_PROMETHEUS. */
  readonly metrics: ServerMetrics | undefined;
  /** Overload protection of both ports: calls in flight, the event loop's last sample, whether calls are refused. */
  readonly overload: OverloadGuard;
  /** MAX_PARTIAL_MESSAGE_BYTES: bytes held in unfinished request messages over both ports. */
  readonly partialMessages: PartialMessageBudget;
  readonly #chain: Chain;
  readonly #httpStreams = new HttpStreams();
  readonly #reporter: ErrorReporter;
  #tracing: Tracing | undefined;
  readonly #services: ServiceImpl[];
  #grpc: Server | undefined;
  #http: FastifyInstance | undefined;
  #admin: FastifyInstance | undefined;
  #invoker: Invoker | undefined;
  #socket: UnixSocket | undefined;
  readonly #workers: Workers;
  /** The identity provider's key set (JWT_JWKS_URL or JWT_OIDC_ISSUER): readiness waits until it was fetched once. */
  readonly #keys: RemoteKeySet | undefined;
  readonly #tlsFiles: WatchedTlsFiles[] = [];
  #starting: Promise<unknown> | undefined;
  #stopping: Promise<void> | undefined;
  /** Work readiness need not wait for (validation plans, the Node process collectors): run once ready. */
  readonly #afterReady: (() => void)[] = [];
  readonly #queueAfterReady = (task: () => void): void => {
    this.#afterReady.push(task);
  };

  constructor(options: AppOptions) {
    this.config = options.config ?? loadConfig();
    this.log = configureLogging({ level: this.config.LOG_LEVEL, format: this.config.LOG_FORMAT, destination: options.logDestination });
    // From here, not only once the gRPC server is made: grpc-js clients a preStart hook (or a service's
    // constructor) creates log through the same logger.
    routeGrpcJsLogs();
    this.#services = options.services;
    this.#reporter = createReporter(this.config.SENTRY_DSN, this.config.GIT_COMMIT);
    this.metrics = createServerMetrics(this.config);
    this.#keys = remoteKeySet(this.config);
    this.overload = new OverloadGuard(
      {
        maxEventLoopDelayMs: this.config.OVERLOAD_MAX_EVENT_LOOP_DELAY_MS,
        maxEventLoopUtilization: this.config.OVERLOAD_MAX_EVENT_LOOP_UTILIZATION,
        maxInFlightCalls: this.config.MAX_IN_FLIGHT_CALLS,
      },
      this.metrics?.onShed,
    );
    if (this.overload.enabled) this.metrics?.watchOverload(this.overload);
    this.partialMessages = new PartialMessageBudget(this.config.MAX_PARTIAL_MESSAGE_BYTES, this.metrics?.onShed);
    if (this.partialMessages.enabled) this.metrics?.watchPartialMessages(this.partialMessages);
    this.#chain = new Chain(
      defaultInterceptors(this.config, {
        reporter: this.#reporter,
        tracing: tracingEnabled(),
        services: this.#services,
        metrics: this.metrics,
        afterReady: this.#queueAfterReady,
        keys: this.#keys,
        httpStreams: this.#httpStreams,
      }),
      { around: this.metrics && grpcMetrics(this.metrics, { exemplars: tracingEnabled() }) },
    );
    this.readiness = new Readiness(this.#services.map((s) => s.desc.typeName));
    this.gateway = new Marshalers({ sse: !this.config.DISABLE_SSE_MARSHALER });
    this.#workers = new Workers(
      this.#services.flatMap((s) => s.workers ?? []),
      { log: this.log, registry: this.metrics?.registry },
    );
  }

  /** Adds interceptors in front of the default chain. Only before `start()` (e.g. from preStart). */
  prepend(...interceptors: NamedInterceptor[]): void {
    this.#chain.prepend(...interceptors);
  }

  /**
   * A typed client of another service that forwards this service's trace and debug headers, counted in
   * `grpc_client_*`, its breaker logging to the service's log. `options` sets retries, hedging, the retry budget,
   * the breaker and balancing (see `ClientOptions`).
   */
  createClient<S extends DescService>(service: S, address: string, options: ClientOptions<S> = {}): Client<S> {
    return createClient(service, address, {
      traceHeader: this.config.TRACE_HEADER_NAME,
      debugHeader: this.config.DEBUG_LOG_HEADER_NAME,
      metrics: this.metrics?.clients,
      log: this.log,
      ...options,
    });
  }

  /** The chain's interceptor names, outermost first. */
  interceptorNames(): string[] {
    return this.#chain.names();
  }

  /** Starts everything and reports ready. Rejects (having stopped what it started) if any step fails. */
  start(): Promise<Addresses> {
    const starting = this.#start();
    this.#starting ??= starting;
    return starting;
  }

  async #start(): Promise<Addresses> {
    const config = this.config;
    this.log.info({ config: configLine(config) }, "starting");
    // Where the gateway dials the gRPC server: loopback when listening on every interface.
    const localHost = config.LISTEN_HOST === "0.0.0.0" || config.LISTEN_HOST === "::" ? "127.0.0.1" : config.LISTEN_HOST;
    // TLS files are read before preStart, so a bad file fails start-up before anything is opened.
    const tls = loadGrpcTls(config, localHost);
    this.#fetchKeys();
    const httpTls = loadHttpTls(config);
    try {
      await this.#hooks("preStart", this);
    } catch (err) {
      throw new Error(`preStart: ${(err as Error)?.message ?? String(err)}`, { cause: err });
    }
    this.#tracing = await setupTracing(config.APP_NAME || readPackageJson().name || "service");

    const methods = bindMethods(this.#services, this.#chain, { maxSendBytes: config.GRPC_MAX_SEND_MSG_SIZE });
    // Checks that are all off cost nothing: the transports are not given the guard.
    const overload = this.overload.enabled ? this.overload : undefined;
    for (const s of this.#services) for (const m of s.desc.file.messages) detailTypes.add(m);
    this.#grpc = createGrpcServer({
      config,
      services: this.#services,
      methods,
      readiness: this.readiness,
      onRejectedBeforeHandler: this.metrics?.onRejectedBeforeHandler,
      overload,
      onConnectionRefused: this.metrics?.connectionRefused("grpc"),
      partialMessages: this.partialMessages,
    });
    let mode = gatewayMode(config);
    // With TLS the gateway's hop is TLS over TCP too: a plaintext socket would bypass it.
    if (mode === "unix" && tls) mode = "tcp";
    // A required client certificate would refuse the gateway's own hop: its calls enter the chain in process.
    if (tls?.clientAuth === "require") mode = "in-process";
    if (mode === "unix") {
      this.#socket = await bindUnixSocket(this.#grpc);
      if (!this.#socket) mode = "tcp";
      else if (this.#socket.replaced.length > 0)
        this.log.info({ removed: this.#socket.replaced }, "removed the gateway sockets of killed processes");
    }

    const cors = new CorsPolicy(corsSettings(config));
    const http = await createHttpServer(config, {
      http2: true,
      tls: httpTls,
      onConnectionRefused: this.metrics?.connectionRefused("http"),
      partialMessages: this.partialMessages,
      overload: overload && {
        guard: overload,
        corsHeaders: (req) => cors.headersFor(req.headers.origin, req.headers.host ?? (req.headers[":authority"] as string | undefined)),
      },
    });
    this.#http = http;
    if (config.SINGLE_PORT) serveGrpcOnHttpPort(this.#grpc, http);
    // Before any route, so it covers them all; the route tables it asks are filled in below.
    const preflight: ((path: string) => readonly string[])[] = [];
    if (cors.enabled) registerCors(http, cors, (path) => methodsAt(preflight, path));
    registerHealthRoutes(http, buildInfo(config), this.readiness);
    const invoker: Invoker = {
      // Bound once the gRPC port is known, before the HTTP port accepts anything.
      invoke: (method, request, options) => this.#invoker!.invoke(method, request, options), // no rest array per request
      close: () => this.#invoker?.close(),
    };
    const routes = compileRoutes(methods);
    const headers = {
      traceHeader: config.TRACE_HEADER_NAME,
      debugHeader: config.DEBUG_LOG_HEADER_NAME,
      prefixes: config.HTTP_HEADER_PREFIXES.map((p) => p.toLowerCase()),
    };
    const gatewayMethods = registerGateway(http, {
      routes,
      invoker,
      observer: this.metrics?.gatewayObserver(routes),
      onRejected: this.metrics?.onRejectedBeforeHandler,
      headers,
      marshalers: this.gateway,
      heartbeatMs: config.SSE_HEARTBEAT_SECONDS * 1000,
      streamIdleMs: config.HTTP_STREAM_IDLE_TIMEOUT_SECONDS * 1000,
      maxMessageBytes: config.GRPC_MAX_RECV_MSG_SIZE,
      partialMessages: this.partialMessages,
    });
    const protocolMethods = registerBrowserProtocols(http, {
      methods,
      readMaxBytes: config.GRPC_MAX_RECV_MSG_SIZE,
      writeMaxBytes: config.GRPC_MAX_SEND_MSG_SIZE,
      log: this.log,
      onRejected: this.metrics?.onRejectedBeforeHandler,
      streamIdleMs: config.HTTP_STREAM_IDLE_TIMEOUT_SECONDS * 1000,
      partialMessages: this.partialMessages,
    });
    preflight.push(protocolMethods, gatewayMethods);
    registerWebSockets(http, {
      methods,
      routes,
      cors,
      headers,
      maxMessageBytes: config.GRPC_MAX_RECV_MSG_SIZE,
      partialMessages: this.partialMessages,
      log: this.log,
    });
    let listening: number | undefined;
    const ops = {
      config,
      services: this.#services,
      routes,
      metrics: this.metrics,
      httpPort: () => listening,
      afterReady: this.#queueAfterReady,
    };
    if (config.ADMIN_PORT !== undefined) {
      this.#admin = await createHttpServer(config, {
        http2: false,
        port: "admin",
        onConnectionRefused: this.metrics?.connectionRefused("admin"),
      });
      registerOpsRoutes(this.#admin, { ...ops, adminPort: true });
    } else {
      const publicPaths = registerOpsRoutes(http, { ...ops, adminPort: false });
      if (authRequired(config)) {
        this.log.warn(
          { publicPaths },
          `${publicPaths.join(", ")} are served without authentication on the HTTP port: set ADMIN_PORT to move them to a port of their own, kept off the public network`,
        );
      }
    }

    try {
      const grpcPort = await listenGrpc(this.#grpc, config.LISTEN_HOST, config.GRPC_PORT, tls?.server);
      if (tls) this.#watchTls(tls.files, "gRPC");
      const target = this.#socket?.target ?? `${localHost.includes(":") ? `[${localHost}]` : localHost}:${grpcPort}`;
      // The gateway receives what the server may send: a response the server allows must not fail at the hop.
      this.#invoker =
        mode === "in-process"
          ? inProcessInvoker()
          : grpcInvoker(target, { tls: tls?.gateway, maxReceiveLength: config.GRPC_MAX_SEND_MSG_SIZE });
      await listenHttp(http, config.LISTEN_HOST, config.HTTP_PORT, "HTTP", "HTTP_PORT");
      if (httpTls) {
        const front = http2SideOf(http)?.tls;
        httpTls.onReload((next) => front?.setSecureContext({ cert: next.cert, key: next.key }));
        this.#watchTls(httpTls.files, "HTTP");
      }
      const httpPort = boundPort(http, config.HTTP_PORT);
      listening = httpPort;
      let adminPort: number | undefined;
      if (this.#admin && config.ADMIN_PORT !== undefined) {
        await listenHttp(this.#admin, config.LISTEN_HOST, config.ADMIN_PORT, "admin", "ADMIN_PORT");
        adminPort = boundPort(this.#admin, config.ADMIN_PORT);
        cors.adminPort = adminPort;
      }
      this.#workers.start();
      this.overload.start();
      await this.#hooks("postStart");
      this.readiness.setReady();
      const host = localHost;
      const urls = serviceUrls(config, host, { grpc: grpcPort, http: httpPort, admin: adminPort });
      const scheme = httpTls ? "https" : "http";
      this.log.info(
        {
          ...urls,
          grpcPort,
          httpPort,
          adminPort,
          gatewayMode: mode,
          grpcTls: tls !== undefined,
          grpcClientAuth: tls?.clientAuth,
          httpTls: httpTls !== undefined,
          startup_ms: Math.round(performance.now()),
        },
        "ready",
      );
      this.#warmUp();
      return {
        grpcPort,
        httpPort,
        httpUrl: `${scheme}://${host}:${httpPort}`,
        adminUrl: adminPort === undefined ? undefined : `http://${host}:${adminPort}`,
      };
    } catch (err) {
      this.overload.stop();
      const cleanup = AbortSignal.timeout(1000);
      await Promise.race([this.#workers.stop(), abortion(cleanup)]);
      await this.#closeServers(cleanup);
      throw err;
    }
  }

  /**
   * Graceful shutdown: preStop → readiness fails, failCheck(true) → drain wait →
   * workers stop → admin closes → HTTP then gRPC finish in-flight calls → stop → postStop.
   * SHUTDOWN_DURATION_IN_SECONDS bounds the whole of it: calls still running then are cut, and a
   * hook or worker still busy is no longer awaited. A hook that throws is logged and shutdown goes
   * on; stop() then rejects once every step has run. Idempotent; during start-up, it waits for it first.
   */
  stop(): Promise<void> {
    const settled = this.#starting?.then(noop, noop);
    this.#stopping ??= settled ? settled.then(() => this.#stop()) : this.#stop();
    return this.#stopping;
  }

  async #stop(): Promise<void> {
    const config = this.config;
    const budget = AbortSignal.timeout(config.SHUTDOWN_DURATION_IN_SECONDS * 1000);
    const failures: unknown[] = [];
    /** One step, awaited until it ends or the budget does; a failure is logged and kept. */
    const step = async (name: string, work: () => unknown): Promise<void> => {
      const running = (async () => work())();
      const outcome = await Promise.race([running.then(() => "done" as const), abortion(budget).then(() => "overran" as const)]).catch(
        (err: unknown) => err,
      );
      if (outcome === "done") return;
      if (outcome === "overran") {
        running.catch(() => {});
        failures.push(new Error(`${name}: still running when the shutdown budget ran out`));
        this.log.error({ step: name, budgetSeconds: config.SHUTDOWN_DURATION_IN_SECONDS }, `shutdown: ${name} overran the budget`);
      } else {
        failures.push(outcome);
        this.log.error({ err: outcome, step: name }, `shutdown: ${name} failed`);
      }
    };
    // Only hooks some service defines are steps: once the budget is spent, even a step with nothing to run would
    // lose the race against it and count as overrun (exit 1).
    const hookStep = (name: HookName, ...args: unknown[]) =>
      this.#services.some((s) => (s as LifecycleHooks)[name]) ? step(name, () => this.#hooks(name, ...args)) : undefined;
    this.log.info("shutting down");
    // Keep-alive HTTP/1.1 clients reconnect for their next request, to a replica the load balancer still lists.
    if (this.#http) closeAfterEachResponse(this.#http);
    await hookStep("preStop");
    this.readiness.fail();
    await hookStep("failCheck", true);
    await sleep(config.GRPC_GRACEFUL_DURATION_IN_SECONDS * 1000, undefined, { signal: budget }).catch(noop);
    // The load balancers have had the drain wait to stop sending here; clients holding a connection (client-side
    // balancing, a proxy's pool) now move their next calls, while the listener still takes whoever comes late.
    if (this.#grpc) drainGrpc(this.#grpc);
    if (this.#workers.size > 0) {
      await step("workers", () => this.#workers.stop());
      const left = this.#workers.running();
      this.log.info(left.length > 0 ? { stillRunning: left } : {}, "workers stopped");
    }
    await this.#closeServers(budget);
    if (budget.aborted)
      this.log.warn({ budgetSeconds: config.SHUTDOWN_DURATION_IN_SECONDS }, "shutdown budget spent: servers force-stopped");
    this.overload.stop();
    await hookStep("stop");
    await hookStep("postStop");
    // Last: spans and error reports of the final calls still go out (within what is left of the budget).
    await Promise.race([Promise.allSettled([this.#tracing?.shutdown(), this.#reporter.flush?.(2000)]), abortion(budget)]);
    this.log.info("stopped");
    await writesDone(this.log);
    flushLogs();
    if (failures.length === 1) throw failures[0];
    if (failures.length > 1) throw new AggregateError(failures, "shutdown: several steps failed");
  }

  /** Reloads TLS files when they change (TLS_FILES_CHECK_SECONDS); stopped with the servers. `port` names them in the log. */
  #watchTls(files: WatchedTlsFiles, port: "gRPC" | "HTTP"): void {
    this.#tlsFiles.push(files);
    files.watch(this.config.TLS_FILES_CHECK_SECONDS * 1000, {
      reloaded: (next) =>
        this.log.info(
          { serialNumber: next.leaf.serialNumber, fingerprint256: next.leaf.fingerprint256, validTo: next.leaf.validTo },
          `${port} TLS files reloaded`,
        ),
      failed: (err) => this.log.warn({ err: err.message }, `${port} TLS files changed but cannot be used: the previous ones stay in use`),
    });
  }

  /** Starts fetching the provider's key set (discovery first, with OIDC); readiness fails until it has it. */
  #fetchKeys(): void {
    const keys = this.#keys;
    if (!keys) return;
    const done = this.readiness.waitFor("the identity provider's key set");
    keys.start({
      fetched: () => {
        done();
        this.log.info("identity provider's key set fetched");
      },
      failed: (err, retryInMs) =>
        this.log.warn(
          { err: (err as Error)?.message ?? String(err), retryInMs },
          "cannot fetch the identity provider's key set: not ready",
        ),
    });
  }

  /**
   * Runs the after-ready tasks a moment after ready (AFTER_READY_DELAY_MS), so that the first readiness probes
   * and calls are answered before them; a call that comes first does the same work itself, with the same result.
   */
  #warmUp(): void {
    const tasks = this.#afterReady.splice(0);
    if (tasks.length === 0) return;
    setTimeout(() => {
      for (const task of tasks) {
        try {
          task();
        } catch (err) {
          this.log.warn({ err }, "warm-up after ready failed");
        }
      }
    }, AFTER_READY_DELAY_MS).unref();
  }

  async #closeServers(budget: AbortSignal): Promise<void> {
    if (this.#admin) await Promise.race([this.#admin.close(), abortion(budget)]);
    // HTTP before gRPC: its in-flight gateway calls still need the gRPC server to answer them.
    if (this.#http) {
      // A keep-alive connection busy when closing began turns idle later; close those as they come.
      const server = this.#http.server;
      const idle = setInterval(() => server.closeIdleConnections(), 50);
      const closing = this.#http.close();
      await Promise.race([closing, abortion(budget)]);
      // The budget ran out: the calls still running (streams, and unary calls whose handler has not returned) end
      // with UNAVAILABLE, each in its protocol's form, and get a moment to reach their clients before the process stops.
      if (budget.aborted && this.#httpStreams.endAll() > 0) await Promise.race([closing, sleep(STREAM_FLUSH_MS)]);
      clearInterval(idle);
    }
    this.#invoker?.close();
    this.#keys?.stop();
    for (const files of this.#tlsFiles) files.stop();
    this.readiness.closeWatches();
    if (this.#grpc) await stopGrpc(this.#grpc, budget);
    this.#socket?.remove();
  }

  async #hooks(name: HookName, ...args: unknown[]): Promise<void> {
    for (const service of this.#services) {
      const hook = (service as LifecycleHooks)[name] as ((...a: unknown[]) => unknown) | undefined;
      if (hook) await hook.apply(service, args);
    }
  }
}

/**
 * SINGLE_PORT: the HTTP port's HTTP/2 connections go to the gRPC server, which serves their gRPC streams and hands
 * every other stream back to the HTTP port's HTTP/2 handling (grpc-server.ts, singlePortInjector).
 */
function serveGrpcOnHttpPort(grpc: Server, http: FastifyInstance): void {
  const side = http2SideOf(http);
  if (!side) throw new Error("SINGLE_PORT: the HTTP server does not speak HTTP/2");
  const injector = singlePortInjector(
    grpc,
    (stream, headers, flags, rawHeaders) => side.server.emit("stream", stream, headers, flags, rawHeaders),
    (session) => trackSession(side, session, false),
  );
  side.serveConnection = (socket) => injector.injectConnection(socket);
}

async function listenHttp(server: FastifyInstance, host: string, port: number, name: string, variable: string): Promise<void> {
  try {
    await server.listen({ host, port });
  } catch (err) {
    throw new Error(`${name}: cannot listen on ${host}:${port}: ${listenProblem(err as Error, variable)}`);
  }
}

function boundPort(server: FastifyInstance, configured: number): number {
  const address = server.server.address();
  return typeof address === "object" && address ? address.port : configured;
}

/** Calls need credentials: JWT_SECRET, JWT_JWKS_URL, JWT_OIDC_ISSUER or API_KEYS is set. */
function authRequired(config: Config): boolean {
  return (
    config.JWT_SECRET !== undefined ||
    config.JWT_JWKS_URL !== undefined ||
    config.JWT_OIDC_ISSUER !== undefined ||
    config.API_KEYS.length > 0
  );
}

function noop(): void {}

/** The methods the first route table that serves `path` serves there. */
function methodsAt(tables: readonly ((path: string) => readonly string[])[], path: string): readonly string[] {
  for (const table of tables) {
    const methods = table(path);
    if (methods.length > 0) return methods;
  }
  return [];
}

/**
 * Waits (up to 1 s) until the logger's asynchronous destination has no write in flight: flushLogs()
 * writes synchronously, and doing so during an async write would put the last lines before earlier ones.
 */
async function writesDone(log: Logger): Promise<void> {
  const stream = (log as unknown as Record<symbol, { _writing?: boolean } | undefined>)[pino.symbols.streamSym];
  for (const end = Date.now() + 1000; stream?._writing === true && Date.now() < end;) await sleep(1);
}

function abortion(signal: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    if (signal.aborted) resolve();
    else signal.addEventListener("abort", () => resolve(), { once: true });
  });
}
