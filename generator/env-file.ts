// The service's choices as environment variables, for .env (with secrets) and .env.example (without).
import { randomBytes } from "node:crypto";
import type { AuthMode } from "./args.js";

export interface Choices {
  auth: AuthMode;
  adminPort?: number;
  unixSocket: boolean;
  sse: boolean;
  install: boolean;
  git: boolean;
}

export type EnvVars = [key: string, value: string][];

/** 32 random bytes, base64url: usable as an HS256 secret and as an API key. */
export const randomSecret = (): string => randomBytes(32).toString("base64url");

/** Variables that belong in both files (no secrets). */
export function publicVars(c: Choices): EnvVars {
  const vars: EnvVars = [];
  // Fail closed: src/main.ts commits the same default, so a clone without .env refuses to start rather than serve openly.
  if (c.auth !== "none") vars.push(["AUTH_REQUIRED", "true"]);
  // The gateway forwards x-api-key as metadata only when it matches HTTP_HEADER_PREFIXES.
  if (c.auth === "api-key" || c.auth === "both") vars.push(["HTTP_HEADER_PREFIXES", "x-api-key"]);
  if (c.adminPort !== undefined) vars.push(["ADMIN_PORT", String(c.adminPort)]);
  if (c.unixSocket) vars.push(["DISABLE_UNIX_GATEWAY", "false"]);
  if (!c.sse) vars.push(["DISABLE_SSE_MARSHALER", "true"]);
  return vars;
}

/** Variables that go to .env only. */
export function secretVars(c: Choices, secret: () => string = randomSecret): EnvVars {
  const vars: EnvVars = [];
  if (c.auth === "jwt" || c.auth === "both") vars.push(["JWT_SECRET", secret()]);
  if (c.auth === "api-key" || c.auth === "both") vars.push(["API_KEYS", secret()]);
  return vars;
}

const escape = (s: string) => s.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");

/**
 * Sets KEY=value in a dotenv text: replaces an existing `KEY=` line (active first, else a commented
 * `# KEY=` one) instead of adding a duplicate; appends otherwise.
 */
export function setEnvVar(text: string, key: string, value: string): string {
  const line = `${key}=${value}`;
  const active = new RegExp(`^[ \\t]*(?:export[ \\t]+)?${escape(key)}[ \\t]*=.*$`, "m");
  const commented = new RegExp(`^[ \\t]*#[ \\t]*${escape(key)}[ \\t]*=.*$`, "m");
  // A function replacement keeps `$` in values literal.
  if (active.test(text)) return text.replace(active, () => line);
  if (commented.test(text)) return text.replace(commented, () => line);
  const sep = text === "" || text.endsWith("\n") ? "" : "\n";
  return `${text}${sep}${line}\n`;
}

export function applyEnvVars(text: string, vars: EnvVars): string {
  return vars.reduce((acc, [k, v]) => setEnvVar(acc, k, v), text);
}

/** The entry point's call that starts the service, as the template writes it: `await run([exampleService]);`. */
const RUN_CALL = /await run\(\[([^\]]*)\]\);/;

/**
 * src/main.ts of a repository generated with auth: AUTH_REQUIRED defaults to true there (committed, not a secret),
 * so a fresh clone without .env refuses to start, naming the variables, instead of serving without authentication.
 */
export function requireAuthInMain(text: string): string {
  return text.replace(
    RUN_CALL,
    (_all, services: string) =>
      `await run([${services}], {\n` +
      "  // Generated with --auth: without JWT_SECRET, JWT_JWKS_URL, JWT_OIDC_ISSUER or API_KEYS (e.g. a clone without .env)\n" +
      "  // the service refuses to start. AUTH_REQUIRED=false in the environment serves without authentication, deliberately.\n" +
      '  defaults: { AUTH_REQUIRED: "true" },\n' +
      "});",
  );
}
