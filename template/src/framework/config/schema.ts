import * as p from "./parsers.js";

interface Setting<T> {
  parse: p.Parser<T>;
  /** Used when the variable is unset or empty. */
  default: T;
  /** One line for the configuration table of docs/configuration.md. */
  doc: string;
  /** Redacted from the start-up summary. */
  secret?: boolean;
}

function setting<T>(parse: p.Parser<T>, defaultValue: T, doc: string, secret = false): Setting<T> {
  return { parse, default: defaultValue, doc, secret };
}

const optional = <T>(parse: p.Parser<T>): p.Parser<T | undefined> => parse;

/** The longest duration in seconds a setting armed as a timer may take (see GRPC_SERVER_MAX_CONNECTION_AGE_SECONDS). */
const MAX_TIMER_SECONDS = 20 * 86_400;

/**
 * Every setting the framework reads, with its type, default and meaning.
 * The configuration table of docs/configuration.md is checked against this list by a test.
 */
export const settings = {
  APP_NAME: setting(p.string, "", "Service name in logs, metrics and /healthcheck (default: package.json name)"),
  LISTEN_HOST: setting(p.string, "0.0.0.0", "Address every listener binds"),
  GRPC_PORT: setting(p.port, 9090, "gRPC port (0 picks a free port)"),
  HTTP_PORT: setting(p.port, 9091, "HTTP port: gateway, /healthcheck, /readycheck (0 picks a free port)"),
  SINGLE_PORT: setting(
    p.boolean,
    false,
    "Serves gRPC on the HTTP port too: gRPC, gRPC-Web, Connect, REST and WebSocket on one listener (the gRPC port still listens)",
  ),
  ADMIN_PORT: setting(optional(p.port), undefined, "Moves /metrics, /swagger/ and /debug/pprof/ to this port"),
  LOG_LEVEL: setting(p.oneOf("debug", "info", "warn", "error"), "info", "Global log level"),
  LOG_FORMAT: setting(p.oneOf("json", "pretty"), "json", "json for machines, pretty for humans (make run)"),
  TRACE_HEADER_NAME: setting(p.headerName, "x-trace-id", "Header carrying the trace ID in and out"),
  DEBUG_LOG_HEADER_NAME: setting(p.headerName, "x-debug-log-level", "Header that switches one request to debug logging"),
  DISABLE_DEBUG_LOG_INTERCEPTOR: setting(p.boolean, false, "Turns off per-request debug logging"),
  RESPONSE_TIME_LOG_ERROR_ONLY: setting(p.boolean, false, "Writes the per-call response-time line for errors only"),
  GRPC_SERVER_DEFAULT_TIMEOUT_IN_SECONDS: setting(p.number(0), 60, "Deadline for unary calls that arrive without one (0 = none)"),
  RATE_LIMIT_PER_SECOND: setting(p.number(0), 0, "Per-process token bucket rate (0 = off)"),
  RATE_LIMIT_BURST: setting(
    optional(p.integer(1, Number.MAX_SAFE_INTEGER)),
    undefined,
    "Token bucket size (default: the rate, at least 1)",
  ),
  OVERLOAD_MAX_EVENT_LOOP_DELAY_MS: setting(
    p.number(0),
    20,
    "Overload protection: the process is overloaded when three busy turns of the event loop in a row, each at least half this many ms long, 1.5 times the last and reading 1.25 times its calls, end with one this long (an overload growing), or when, for most of the last 0.3 s (100 ms samples), the mean delay of the loop's timers was above this many ms while its utilisation was above OVERLOAD_MAX_EVENT_LOOP_UTILIZATION; new calls (not streams) that reach it once the loop's current turn has run half this long are then refused (UNAVAILABLE, HTTP 503) (0 = this check off)",
  ),
  OVERLOAD_MAX_EVENT_LOOP_UTILIZATION: setting(
    p.number(0, 1),
    0.9,
    "Overload protection: the process is overloaded when, for most of the last 0.3 s (100 ms samples), the event loop was busy more than this fraction of the time while its delay was above OVERLOAD_MAX_EVENT_LOOP_DELAY_MS (0 = this check off)",
  ),
  MAX_IN_FLIGHT_CALLS: setting(
    p.integer(0, 1_000_000),
    10_000,
    "Overload protection: calls in flight (gRPC and HTTP, counted from their arrival) beyond which new calls are refused (0 = no limit)",
  ),
  DISABLE_PROTO_VALIDATE: setting(p.boolean, false, "Turns off buf.validate request validation"),
  GRPC_MAX_RECV_MSG_SIZE: setting(p.integer(1, 2 ** 31 - 1), 4 * 1024 * 1024, "Largest request in bytes (gRPC message or HTTP body)"),
  GRPC_MAX_SEND_MSG_SIZE: setting(p.integer(1, 2 ** 31 - 1), 4 * 1024 * 1024, "Largest response message in bytes"),
  // Bounds memory: a client may announce a large message, send most of it and stall, on every stream of every
  // connection (~400 MB a connection before this); 64 MiB of such bytes plus a replica's ~150 MB stays within 512Mi.
  MAX_PARTIAL_MESSAGE_BYTES: setting(
    p.integer(0, 2 ** 53 - 1),
    64 * 1024 * 1024,
    "Bytes all calls together may hold in request messages and HTTP request bodies begun and not yet whole; a call that would pass it ends with RESOURCE_EXHAUSTED (HTTP 429) (0 = no limit)",
  ),
  GRPC_MAX_CONCURRENT_STREAMS: setting(
    p.integer(1, 2 ** 31 - 1),
    100,
    "Calls one client connection may hold open on the gRPC port at once (the gateway's own connection is exempt)",
  ),
  // Bounds memory: each connection may hold GRPC_MAX_CONCURRENT_STREAMS open streams of ~10 KB, health checks and
  // refused calls included (MAX_IN_FLIGHT_CALLS does not bound those); 200 × 100 idle streams reach 270–295 MB of RSS.
  GRPC_MAX_CONNECTIONS: setting(
    p.integer(0, 1_000_000),
    200,
    "Open connections the gRPC port accepts, more are closed at once (0 = no cap); each may hold GRPC_MAX_CONCURRENT_STREAMS streams of ~10 KB: for more client pods, raise it with the memory limit",
  ),
  GRPC_FIRST_MESSAGE_TIMEOUT_SECONDS: setting(
    p.number(0),
    10,
    "A gRPC call whose first request message has not arrived whole within this (none, or only part of it) ends with DEADLINE_EXCEEDED (0 = off)",
  ),
  DISABLE_GRPC_REFLECTION: setting(p.boolean, false, "Turns off gRPC server reflection"),
  // Timers hold at most 24.8 days (2^31-1 ms), and grpc-js adds up to 10 % to the age: 20 days stays under both.
  GRPC_SERVER_MAX_CONNECTION_AGE_SECONDS: setting(
    p.number(0, MAX_TIMER_SECONDS),
    1800,
    "A gRPC connection this old (±10 % jitter) is sent GOAWAY, so clients reconnect and spread over replicas (0 = never)",
  ),
  GRPC_SERVER_MAX_CONNECTION_AGE_GRACE_SECONDS: setting(
    p.number(0, MAX_TIMER_SECONDS),
    30,
    "Calls still running on a connection sent GOAWAY for its age get this long, then are cut (0 = no limit)",
  ),
  GRPC_SERVER_MAX_CONNECTION_IDLE_SECONDS: setting(
    p.number(0, MAX_TIMER_SECONDS),
    300,
    "A gRPC connection without a call for this long is sent GOAWAY (0 = never)",
  ),
  GRPC_SERVER_KEEPALIVE_MIN_TIME_SECONDS: setting(
    p.number(0, MAX_TIMER_SECONDS),
    10,
    "A client pinging more often than this, with nothing sent back between, is sent GOAWAY too_many_pings at its 3rd strike (0 = any rate)",
  ),
  GRPC_SERVER_KEEPALIVE_PERMIT_WITHOUT_CALLS: setting(
    p.boolean,
    true,
    "false counts every ping on a connection without a call as a strike (grpc-go's default)",
  ),
  GRPC_TLS_CERT_FILE: setting(optional(p.string), undefined, "PEM certificate for gRPC TLS (with GRPC_TLS_KEY_FILE)"),
  GRPC_TLS_KEY_FILE: setting(optional(p.string), undefined, "PEM private key for gRPC TLS (with GRPC_TLS_CERT_FILE)"),
  GRPC_TLS_CLIENT_CA_FILE: setting(
    optional(p.string),
    undefined,
    "PEM CA certificate(s) that client certificates must chain to (mTLS; needs GRPC_TLS_CERT_FILE)",
  ),
  GRPC_TLS_CLIENT_AUTH: setting(
    p.oneOf("require", "optional"),
    "require",
    "With GRPC_TLS_CLIENT_CA_FILE: require a client certificate, or accept calls without one (optional)",
  ),
  TLS_FILES_CHECK_SECONDS: setting(
    p.number(0.01, 3600),
    10,
    "How often the TLS certificate, key and CA files are checked: changed files are reloaded without a restart",
  ),
  HTTP_TLS_CERT_FILE: setting(
    optional(p.string),
    undefined,
    "PEM certificate for TLS on the HTTP port, HTTP/2 and HTTP/1.1 by ALPN (with HTTP_TLS_KEY_FILE)",
  ),
  HTTP_TLS_KEY_FILE: setting(optional(p.string), undefined, "PEM private key for TLS on the HTTP port (with HTTP_TLS_CERT_FILE)"),
  GATEWAY_MODE: setting(
    optional(p.oneOf("tcp", "unix", "in-process")),
    undefined,
    "How the gateway reaches the handlers: tcp, unix or in-process (default: from DISABLE_UNIX_GATEWAY)",
  ),
  DISABLE_UNIX_GATEWAY: setting(p.boolean, true, "false makes the gateway use a private Unix socket"),
  HTTP_HEADER_PREFIXES: setting(p.list, [] as string[], "Comma list of header prefixes forwarded from HTTP to gRPC metadata"),
  DISABLE_HTTP_COMPRESSION: setting(p.boolean, false, "Turns off gzip/brotli of HTTP responses"),
  DISABLE_SSE_MARSHALER: setting(p.boolean, false, "Serves streams as NDJSON only, never server-sent events"),
  SSE_HEARTBEAT_SECONDS: setting(p.number(0.01), 15, "Interval of the SSE `: ping` comment"),
  HTTP_HEADERS_TIMEOUT_SECONDS: setting(
    p.number(0.01),
    10,
    "An HTTP request's line and headers must arrive within this, else 408 (HTTP/2: a connection stopped inside a header block is closed)",
  ),
  HTTP_REQUEST_TIMEOUT_SECONDS: setting(
    p.number(0.01),
    30,
    "An HTTP request's whole body must arrive within this, else 408; not a client-streaming or bidi call's (see HTTP_STREAM_IDLE_TIMEOUT_SECONDS)",
  ),
  HTTP_STREAM_IDLE_TIMEOUT_SECONDS: setting(
    p.number(0),
    60,
    "A client-streaming or bidi call over HTTP (NDJSON; Connect and gRPC-Web over HTTP/2) whose connection carries nothing either way for this long ends with DEADLINE_EXCEEDED (0 = off)",
  ),
  HTTP_MAX_CONNECTIONS: setting(
    p.integer(0, 1_000_000),
    10_000,
    "Open connections the HTTP port accepts, more are closed at once (0 = no cap); an idle one holds ~15 KB",
  ),
  HTTP_KEEP_ALIVE_TIMEOUT_SECONDS: setting(
    p.number(0.01),
    72,
    "An idle keep-alive HTTP connection closes after this (above the 60 s of common load balancers)",
  ),
  CORS_ALLOWED_ORIGINS: setting(
    p.originList,
    [] as string[],
    "Comma list of browser origins that may call the HTTP port (gateway, SSE, gRPC-Web, Connect, WebSocket), or * for any; empty = CORS off",
  ),
  CORS_ALLOW_CREDENTIALS: setting(p.boolean, false, "Lets allowed origins send cookies and HTTP auth (not with CORS_ALLOWED_ORIGINS=*)"),
  CORS_EXPOSED_HEADERS: setting(
    p.headerNameList,
    [] as string[],
    "Comma list of response headers a page on an allowed origin may read besides the defaults: custom response metadata, Connect trailers as trailer-<name>",
  ),
  CORS_MAX_AGE_SECONDS: setting(p.integer(0, 86_400), 600, "How long a browser may cache a preflight answer"),
  DISABLE_PROMETHEUS: setting(p.boolean, false, "Turns off /metrics"),
  ENABLE_PROMETHEUS_GRPC_HISTOGRAM: setting(p.boolean, true, "false removes the gRPC latency histograms (server and outbound client)"),
  PROMETHEUS_GRPC_HISTOGRAM_BUCKETS: setting(
    p.numberList(0),
    [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10],
    "Comma list of histogram bucket bounds in seconds",
  ),
  DISABLE_DEBUG: setting(p.boolean, false, "Turns off /debug/pprof/"),
  JWT_SECRET: setting(optional(p.string), undefined, "Turns on JWT (HS256) authentication with this secret", true),
  JWT_JWKS_URL: setting(
    optional(p.keySetUrl),
    undefined,
    "Turns on tokens signed by an identity provider: its JSON Web Key Set URL (https; http only to loopback)",
  ),
  JWT_OIDC_ISSUER: setting(
    optional(p.keySetUrl),
    undefined,
    "Turns on an OpenID Connect provider's tokens: finds its key set in /.well-known/openid-configuration and requires its `iss`",
  ),
  JWT_ALGORITHMS: setting(
    p.subsetOf("RS256", "RS384", "RS512", "PS256", "PS384", "PS512", "ES256", "ES384", "ES512", "EdDSA", "Ed25519"),
    ["RS256", "PS256", "ES256", "EdDSA"],
    "Comma list of the signature algorithms accepted with JWT_JWKS_URL or JWT_OIDC_ISSUER",
  ),
  JWT_JWKS_COOL_DOWN_SECONDS: setting(
    p.number(1, 3600),
    30,
    "Least time between two fetches of the key set for tokens with an unknown `kid` (a key rotated in at the provider)",
  ),
  JWT_ISSUER: setting(optional(p.string), undefined, "Required `iss` claim"),
  JWT_AUDIENCE: setting(optional(p.string), undefined, "Required `aud` claim"),
  JWT_CLOCK_SKEW_SECONDS: setting(p.number(0), 30, "Leeway for `exp` and `nbf`"),
  JWT_REQUIRE_EXP: setting(p.boolean, true, "Rejects tokens without an `exp` claim (false accepts tokens that never expire)"),
  API_KEYS: setting(p.list, [] as string[], "Comma list of accepted `x-api-key` values; turns on API-key authentication", true),
  AUTH_REQUIRED: setting(
    p.boolean,
    false,
    "Refuses to start unless JWT_SECRET, JWT_JWKS_URL, JWT_OIDC_ISSUER or API_KEYS is set (`--auth` repos default to true in src/main.ts)",
  ),
  SENTRY_DSN: setting(optional(p.string), undefined, "Reports server errors to Sentry", true),
  GRPC_GRACEFUL_DURATION_IN_SECONDS: setting(p.number(0), 7, "Wait after readiness fails, so load balancers drain"),
  SHUTDOWN_DURATION_IN_SECONDS: setting(p.number(0.01), 15, "Budget for the whole shutdown; in-flight calls are cut after it"),
  GIT_COMMIT: setting(p.string, "", "Build metadata shown by /healthcheck (set at build time)"),
  GIT_BRANCH: setting(p.string, "", "Build metadata shown by /healthcheck (set at build time)"),
  BUILD_DATE: setting(p.string, "", "Build metadata shown by /healthcheck (set at build time)"),
} satisfies Record<string, Setting<unknown>>;

type Settings = typeof settings;

/** The typed, validated configuration: one property per environment variable. */
export type Config = { readonly [K in keyof Settings]: Settings[K]["default"] };
