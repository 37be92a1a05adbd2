import { ConfigValueError } from "./parsers.js";
import { type Config, settings } from "./schema.js";

/** Start-up must stop: one problem per line, each naming the variable and what it accepts. */
export class ConfigError extends Error {
  override readonly name = "ConfigError";
  readonly problems: string[];
  constructor(problems: string[]) {
    super(`invalid configuration:\n${problems.join("\n")}`);
    this.problems = problems;
  }
}

type Env = Record<string, string | undefined>;

/**
 * Reads, types and validates every setting; throws ConfigError listing every bad variable at once. `defaults`
 * (e.g. src/main.ts's `AUTH_REQUIRED: "true"`) stand in for variables the environment leaves unset or empty.
 */
export function loadConfig(env: Env = process.env, defaults: Env = {}): Config {
  const problems: string[] = [];
  const config: Record<string, unknown> = {};
  const failed = new Set<string>();
  for (const [name, s] of Object.entries(settings)) {
    const raw = env[name] === undefined || env[name] === "" ? defaults[name] : env[name];
    if (raw === undefined || raw === "") {
      config[name] = s.default;
      continue;
    }
    try {
      config[name] = s.parse(raw);
    } catch (err) {
      if (!(err instanceof ConfigValueError)) throw err;
      failed.add(name);
      const shown = s.secret ? "" : ` (got ${JSON.stringify(raw)})`;
      problems.push(`${name}: ${err.message}${shown}`);
    }
  }
  // Also when a value failed to parse, so one run reports every problem; checks of a failed value are skipped.
  problems.push(...crossChecks(config as Config, failed));
  if (problems.length > 0) throw new ConfigError(problems);
  return Object.freeze(config) as Config;
}

/**
 * loadConfig for a process's start (the service, `make token`, `make observe`): a bad setting writes each
 * problem to stderr as `<tag>: <problem>` and exits 1.
 */
export function loadConfigOrExit(tag: string, env: Env = process.env, defaults: Env = {}): Config {
  try {
    return loadConfig(env, defaults);
  } catch (err) {
    if (!(err instanceof ConfigError)) throw err;
    for (const line of err.problems) process.stderr.write(`${tag}: ${line}\n`);
    process.exit(1);
  }
}

function crossChecks(c: Config, failed: ReadonlySet<string>): string[] {
  const problems: string[] = [];
  const durationsParsed = !failed.has("GRPC_GRACEFUL_DURATION_IN_SECONDS") && !failed.has("SHUTDOWN_DURATION_IN_SECONDS");
  if (durationsParsed && c.GRPC_GRACEFUL_DURATION_IN_SECONDS >= c.SHUTDOWN_DURATION_IN_SECONDS) {
    problems.push(
      `GRPC_GRACEFUL_DURATION_IN_SECONDS: must be less than SHUTDOWN_DURATION_IN_SECONDS (${c.GRPC_GRACEFUL_DURATION_IN_SECONDS} ≥ ${c.SHUTDOWN_DURATION_IN_SECONDS})`,
    );
  }
  if ((c.GRPC_TLS_CERT_FILE === undefined) !== (c.GRPC_TLS_KEY_FILE === undefined)) {
    const missing = c.GRPC_TLS_CERT_FILE === undefined ? "GRPC_TLS_CERT_FILE" : "GRPC_TLS_KEY_FILE";
    problems.push(`${missing}: must be set together with ${missing === "GRPC_TLS_CERT_FILE" ? "GRPC_TLS_KEY_FILE" : "GRPC_TLS_CERT_FILE"}`);
  }
  if (c.GRPC_TLS_CLIENT_CA_FILE !== undefined && c.GRPC_TLS_CERT_FILE === undefined)
    problems.push("GRPC_TLS_CLIENT_CA_FILE: needs GRPC_TLS_CERT_FILE and GRPC_TLS_KEY_FILE (client certificates need TLS)");
  // Fail closed: a repository generated with auth must never serve without it because its secrets were not deployed.
  const credentialSource =
    c.JWT_SECRET !== undefined || c.JWT_JWKS_URL !== undefined || c.JWT_OIDC_ISSUER !== undefined || c.API_KEYS.length > 0;
  if (
    c.AUTH_REQUIRED &&
    !failed.has("AUTH_REQUIRED") &&
    !credentialSource &&
    ["JWT_SECRET", "JWT_JWKS_URL", "JWT_OIDC_ISSUER", "API_KEYS"].every((v) => !failed.has(v))
  )
    problems.push(
      "AUTH_REQUIRED: authentication is required, but no credential source is set: set JWT_SECRET, JWT_JWKS_URL, JWT_OIDC_ISSUER or API_KEYS " +
        "(in .env, which is not committed, or the deployment's secrets), or AUTH_REQUIRED=false to serve without authentication",
    );
  if (c.JWT_JWKS_URL !== undefined && c.JWT_OIDC_ISSUER !== undefined)
    problems.push("JWT_JWKS_URL: set it or JWT_OIDC_ISSUER, not both (the issuer's discovery document names its key set)");
  if (c.JWT_OIDC_ISSUER !== undefined && c.JWT_ISSUER !== undefined && c.JWT_ISSUER !== c.JWT_OIDC_ISSUER)
    problems.push("JWT_ISSUER: differs from JWT_OIDC_ISSUER, whose tokens must carry it as `iss`: leave JWT_ISSUER unset");
  if ((c.HTTP_TLS_CERT_FILE === undefined) !== (c.HTTP_TLS_KEY_FILE === undefined)) {
    const missing = c.HTTP_TLS_CERT_FILE === undefined ? "HTTP_TLS_CERT_FILE" : "HTTP_TLS_KEY_FILE";
    problems.push(`${missing}: must be set together with ${missing === "HTTP_TLS_CERT_FILE" ? "HTTP_TLS_KEY_FILE" : "HTTP_TLS_CERT_FILE"}`);
  }
  if (!failed.has("CORS_ALLOWED_ORIGINS") && !failed.has("CORS_ALLOW_CREDENTIALS") && c.CORS_ALLOW_CREDENTIALS) {
    // Browsers refuse credentialed responses to `*`; echoing any Origin instead would let every site act as the user.
    if (c.CORS_ALLOWED_ORIGINS.includes("*"))
      problems.push("CORS_ALLOW_CREDENTIALS: cannot be true with CORS_ALLOWED_ORIGINS=*: list the origins that may send credentials");
  }
  const ports: [string, number | undefined][] = [
    ["GRPC_PORT", c.GRPC_PORT],
    ["HTTP_PORT", c.HTTP_PORT],
    ["ADMIN_PORT", c.ADMIN_PORT],
  ];
  const seen = new Map<number, string>();
  for (const [name, value] of ports) {
    if (value === undefined || value === 0 || failed.has(name)) continue;
    const other = seen.get(value);
    if (other) problems.push(`${name}: port ${value} is already used by ${other}`);
    else seen.set(value, name);
  }
  return problems;
}

/** The effective configuration for the start-up log line, with secrets redacted. */
export function configSummary(config: Config): Record<string, unknown> {
  const summary: Record<string, unknown> = {};
  for (const [name, s] of Object.entries(settings)) {
    const value = (config as Record<string, unknown>)[name];
    const isSet = value !== undefined && !(Array.isArray(value) && value.length === 0);
    summary[name] = s.secret && isSet ? "[redacted]" : value;
  }
  return summary;
}

/**
 * The same summary as one compact `NAME=value` line for the start-up log: a 45-line object would bury the
 * "ready" line in a terminal. Unset settings are left out; values with spaces, quotes or `=` are JSON-quoted.
 */
export function configLine(config: Config): string {
  const parts: string[] = [];
  for (const [name, value] of Object.entries(configSummary(config))) {
    if (value === undefined || value === "" || (Array.isArray(value) && value.length === 0)) continue;
    const text = Array.isArray(value) ? value.join(",") : String(value);
    parts.push(`${name}=${/[\s"'=]/.test(text) ? JSON.stringify(text) : text}`);
  }
  return parts.join(" ");
}

/** How the gateway reaches the handlers; GATEWAY_MODE wins over the older DISABLE_UNIX_GATEWAY switch. */
export function gatewayMode(config: Config): "tcp" | "unix" | "in-process" {
  return config.GATEWAY_MODE ?? (config.DISABLE_UNIX_GATEWAY ? "tcp" : "unix");
}
