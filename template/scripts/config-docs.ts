// Prints .env.example and the configuration table of docs/configuration.md from the config schema, so both stay true.
//
//   node --import tsx scripts/config-docs.ts            .env.example to stdout
//   node --import tsx scripts/config-docs.ts --table    the configuration table to stdout
//   node --import tsx scripts/config-docs.ts --write    rewrites .env.example and the table in docs/configuration.md (make config-docs)
import fs from "node:fs";
import path from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";
import { settings } from "../src/framework/config/schema.js";

type Name = keyof typeof settings;

/** Headings, in order. A setting missing here still appears, under "Other". */
const groups: [heading: string, names: Name[]][] = [
  [
    "Service and listeners",
    ["APP_NAME", "LISTEN_HOST", "GRPC_PORT", "HTTP_PORT", "SINGLE_PORT", "HTTP_TLS_CERT_FILE", "HTTP_TLS_KEY_FILE", "ADMIN_PORT"],
  ],
  [
    "Logging",
    [
      "LOG_LEVEL",
      "LOG_FORMAT",
      "TRACE_HEADER_NAME",
      "DEBUG_LOG_HEADER_NAME",
      "DISABLE_DEBUG_LOG_INTERCEPTOR",
      "RESPONSE_TIME_LOG_ERROR_ONLY",
    ],
  ],
  [
    "gRPC",
    [
      "GRPC_SERVER_DEFAULT_TIMEOUT_IN_SECONDS",
      "GRPC_MAX_RECV_MSG_SIZE",
      "MAX_PARTIAL_MESSAGE_BYTES",
      "GRPC_MAX_SEND_MSG_SIZE",
      "GRPC_MAX_CONCURRENT_STREAMS",
      "GRPC_MAX_CONNECTIONS",
      "GRPC_FIRST_MESSAGE_TIMEOUT_SECONDS",
      "DISABLE_PROTO_VALIDATE",
      "DISABLE_GRPC_REFLECTION",
      "GRPC_TLS_CERT_FILE",
      "GRPC_TLS_KEY_FILE",
      "GRPC_TLS_CLIENT_CA_FILE",
      "GRPC_TLS_CLIENT_AUTH",
      "TLS_FILES_CHECK_SECONDS",
    ],
  ],
  [
    "gRPC connections (rebalancing across replicas, keepalive)",
    [
      "GRPC_SERVER_MAX_CONNECTION_AGE_SECONDS",
      "GRPC_SERVER_MAX_CONNECTION_AGE_GRACE_SECONDS",
      "GRPC_SERVER_MAX_CONNECTION_IDLE_SECONDS",
      "GRPC_SERVER_KEEPALIVE_MIN_TIME_SECONDS",
      "GRPC_SERVER_KEEPALIVE_PERMIT_WITHOUT_CALLS",
    ],
  ],
  ["Rate limit", ["RATE_LIMIT_PER_SECOND", "RATE_LIMIT_BURST"]],
  ["Overload protection", ["MAX_IN_FLIGHT_CALLS", "OVERLOAD_MAX_EVENT_LOOP_DELAY_MS", "OVERLOAD_MAX_EVENT_LOOP_UTILIZATION"]],
  [
    "HTTP gateway",
    [
      "GATEWAY_MODE",
      "DISABLE_UNIX_GATEWAY",
      "HTTP_HEADER_PREFIXES",
      "DISABLE_HTTP_COMPRESSION",
      "DISABLE_SSE_MARSHALER",
      "SSE_HEARTBEAT_SECONDS",
      "HTTP_HEADERS_TIMEOUT_SECONDS",
      "HTTP_REQUEST_TIMEOUT_SECONDS",
      "HTTP_STREAM_IDLE_TIMEOUT_SECONDS",
      "HTTP_MAX_CONNECTIONS",
      "HTTP_KEEP_ALIVE_TIMEOUT_SECONDS",
    ],
  ],
  ["Browsers (CORS)", ["CORS_ALLOWED_ORIGINS", "CORS_ALLOW_CREDENTIALS", "CORS_EXPOSED_HEADERS", "CORS_MAX_AGE_SECONDS"]],
  [
    "Authentication",
    [
      "JWT_SECRET",
      "JWT_JWKS_URL",
      "JWT_OIDC_ISSUER",
      "JWT_ALGORITHMS",
      "JWT_JWKS_COOL_DOWN_SECONDS",
      "JWT_ISSUER",
      "JWT_AUDIENCE",
      "JWT_CLOCK_SKEW_SECONDS",
      "JWT_REQUIRE_EXP",
      "API_KEYS",
      "AUTH_REQUIRED",
    ],
  ],
  [
    "Metrics, profiling and error reports",
    ["DISABLE_PROMETHEUS", "ENABLE_PROMETHEUS_GRPC_HISTOGRAM", "PROMETHEUS_GRPC_HISTOGRAM_BUCKETS", "DISABLE_DEBUG", "SENTRY_DSN"],
  ],
  ["Shutdown", ["GRPC_GRACEFUL_DURATION_IN_SECONDS", "SHUTDOWN_DURATION_IN_SECONDS"]],
  ["Build metadata", ["GIT_COMMIT", "GIT_BRANCH", "BUILD_DATE"]],
];

const OTEL_NOTE = "Tracing reads the standard OTEL_* variables; setting OTEL_EXPORTER_OTLP_ENDPOINT turns on OTLP export.";

/** Every setting exactly once, grouped; throws on a grouped name the schema does not have. */
export function groupedSettings(): [heading: string, names: Name[]][] {
  const known = new Set(Object.keys(settings));
  const listed = groups.flatMap(([, names]) => names);
  const unknown = listed.filter((n) => !known.has(n));
  if (unknown.length > 0) throw new Error(`scripts/config-docs.ts groups unknown settings: ${unknown.join(", ")}`);
  const other = (Object.keys(settings) as Name[]).filter((n) => !listed.includes(n));
  return other.length > 0 ? [...groups, ["Other", other]] : groups;
}

/** The default as it would be written in the environment; "" when unset. */
export function defaultText(name: Name): string {
  const value: unknown = settings[name].default;
  if (value === undefined) return "";
  return Array.isArray(value) ? value.join(",") : String(value);
}

const isSecret = (name: Name): boolean => (settings[name] as { secret?: boolean }).secret === true;

export function envExample(): string {
  const lines = [
    "# Every environment variable this service reads, with its default. All are optional.",
    "# `make run` and `make start` read .env (never committed): copy the lines you need there and",
    "# uncomment them. Deployments set the same variables in the container environment.",
    "# `make config-docs` rewrites this file from src/framework/config/schema.ts.",
  ];
  for (const [heading, names] of groupedSettings()) {
    lines.push("", `# ---- ${heading} ----`);
    for (const name of names) {
      lines.push("", `# ${settings[name].doc}`);
      if (isSecret(name)) lines.push("# Secret: set it in .env or the deployment's secret store only, never here.");
      lines.push(`# ${name}=${isSecret(name) ? "" : defaultText(name)}`);
    }
  }
  lines.push("", `# ${OTEL_NOTE}`);
  return `${lines.join("\n")}\n`;
}

/** The page that holds the configuration table, relative to the repository's root. */
export const CONFIG_PAGE = "docs/configuration.md";
const TABLE_HEADER = "| Variable | Default | Meaning |";
const cell = (s: string) => s.replace(/\|/g, "\\|");

export function configTable(): string {
  const rows = [TABLE_HEADER, "|---|---|---|"];
  for (const [, names] of groupedSettings()) {
    for (const name of names) {
      const value = defaultText(name);
      const meaning = cell(settings[name].doc) + (isSecret(name) ? " (a secret: keep it in `.env`, never in git)" : "");
      rows.push(`| \`${name}\` | ${value === "" ? "" : `\`${cell(value)}\``} | ${meaning} |`);
    }
  }
  return `${rows.join("\n")}\n`;
}

/** Replaces the table that starts with TABLE_HEADER (up to the first line not starting with `|`). */
export function replaceTable(readme: string): string {
  const lines = readme.split("\n");
  const start = lines.indexOf(TABLE_HEADER);
  if (start < 0) throw new Error(`${CONFIG_PAGE} has no configuration table (a line "${TABLE_HEADER}")`);
  let end = start;
  while (end < lines.length && lines[end]?.startsWith("|")) end++;
  lines.splice(start, end - start, ...configTable().trimEnd().split("\n"));
  return lines.join("\n");
}

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) {
  const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");
  const arg = process.argv[2];
  if (arg === "--write") {
    fs.writeFileSync(path.join(root, ".env.example"), envExample());
    const page = path.join(root, CONFIG_PAGE);
    fs.writeFileSync(page, replaceTable(fs.readFileSync(page, "utf8")));
    console.log(`wrote .env.example and the configuration table of ${CONFIG_PAGE}`);
  } else if (arg === "--table") {
    process.stdout.write(configTable());
  } else if (arg === undefined) {
    process.stdout.write(envExample());
  } else {
    console.error("usage: node --import tsx scripts/config-docs.ts [--table | --write]");
    process.exitCode = 2;
  }
}
