import type { DescService } from "@bufbuild/protobuf";
import type { Metadata } from "@grpc/grpc-js";
import type { CallContext } from "../call/context.js";
import { Code, GrpcError } from "../call/status.js";
import type { Interceptor } from "../call/types.js";
import type { Config } from "../config/schema.js";
import { LineBudget } from "../logging/line-budget.js";
import { rootLogger } from "../logging/logger.js";
import { apiKeyCheck } from "./api-keys.js";
import { tokenVerifier } from "./jwt.js";
import type { RemoteKeySet } from "./remote-keys.js";
import { authRule, missingScopes } from "./rules.js";

/**
 * The global check of the settings (JWT_SECRET, JWT_JWKS_URL or JWT_OIDC_ISSUER, API_KEYS): resolves when the call may go on, with the
 * token's claims on `ctx.claims`; rejects otherwise. A no-op when neither setting is on.
 */
export type Authenticate = (ctx: CallContext) => Promise<void>;

/**
 * A service's own auth decision (`authorize` in defineService): true or nothing lets the call on;
 * false or a throw refuses it. `authenticate` runs the settings' check.
 */
export type Authorize = (ctx: CallContext, authenticate: Authenticate) => Promise<boolean | void> | boolean | void;

/** What the auth interceptor needs of a served service (a ServiceImpl is one). */
export interface AuthScope {
  readonly desc: DescService;
  authorize?: Authorize;
}

/** Why a call was rejected: the warn line's `reason` and the metric's label, never told to the caller. */
export type RejectionReason =
  | "missing credentials"
  | "invalid credentials"
  | "repeated credentials"
  | "rejected by the service's auth override";

/** The `reason` label of `grpc_server_unauthenticated_total`. */
const REASON_LABEL: Record<RejectionReason, string> = {
  "missing credentials": "missing",
  "invalid credentials": "invalid",
  "repeated credentials": "repeated",
  "rejected by the service's auth override": "service_override",
};

/** Counts a rejected call of the method with this gRPC path (the metrics' `onUnauthenticated`), by reason label. */
export type OnRejected = (path: string, reason: string) => void;

/** Rejection warn lines per second, at most: an unauthenticated client can send as many bad credentials as it likes. */
const REJECTION_LINES_PER_SECOND = 5;

class Rejection extends Error {
  readonly reason: RejectionReason;
  readonly fields: Record<string, unknown>;
  constructor(reason: RejectionReason, fields: Record<string, unknown> = {}) {
    super(reason);
    this.reason = reason;
    this.fields = fields;
  }
}

/** The one answer to every rejected call: it does not say which check failed. */
export function unauthenticated(): GrpcError {
  return new GrpcError(Code.UNAUTHENTICATED, "unauthenticated");
}

const API_KEY_HEADER = "x-api-key";
/** A bearer token is RFC 6750's b64token: any other character (a comma of two joined headers…) makes it no token. */
const BEARER = /^bearer +([A-Za-z0-9\-._~+/]+=*) *$/i;

/** A credential sent twice: two metadata values, or repeated headers the transport joined with ", ". */
const REPEATED = Symbol("repeated");

/**
 * The one credential under `key`, undefined when absent, REPEATED when there is more than one. Neither a token
 * nor an API key contains a comma, so one in the value means headers were joined (or it is no credential).
 */
function credential(md: Metadata, key: string): string | undefined | typeof REPEATED {
  const all = md.get(key);
  if (all.length === 0) return undefined;
  const value = all[0];
  return all.length === 1 && typeof value === "string" && !value.includes(",") ? value : REPEATED;
}

/** The ERR_* code and claim name of a jose error: they name the failed check and never contain the token. */
function tokenErrorFields(err: unknown): Record<string, unknown> {
  const { code, claim } = (err ?? {}) as { code?: unknown; claim?: unknown };
  const fields: Record<string, unknown> = {};
  if (typeof code === "string" && /^ERR_[A-Z_]+$/.test(code)) fields.tokenError = code;
  if (typeof claim === "string" && /^[a-z]{1,16}$/.test(claim)) fields.claim = claim;
  return fields;
}

/**
 * The global authentication check from the settings: a valid bearer JWT (claims go on the context) or a
 * valid `x-api-key`; with both on, either is enough. Keys and secrets are prepared once, here.
 */
export function authenticator(config: Config, keys?: RemoteKeySet): Authenticate | undefined {
  const verifyToken = tokenVerifier(config, keys);
  const keyMatches = config.API_KEYS.length > 0 ? apiKeyCheck(config.API_KEYS) : undefined;
  if (!verifyToken && !keyMatches) return undefined;
  return async (ctx) => {
    const auth = verifyToken ? credential(ctx.metadata, "authorization") : undefined;
    const key = keyMatches ? credential(ctx.metadata, API_KEY_HEADER) : undefined;
    // Two of a kind are refused whatever else the call carries: a proxy in front may have checked the other one.
    if (auth === REPEATED || key === REPEATED) throw new Rejection("repeated credentials");
    let fields: Record<string, unknown> = {};
    const token = auth === undefined ? undefined : BEARER.exec(auth)?.[1];
    if (token !== undefined) {
      try {
        ctx.claims = Object.freeze(await verifyToken!(token));
        return;
      } catch (err) {
        fields = tokenErrorFields(err);
      }
    }
    if (key !== undefined && keyMatches!(key)) return;
    throw new Rejection(auth === undefined && key === undefined ? "missing credentials" : "invalid credentials", fields);
  };
}

/** Auth settings off: every call may go on (a service override may still refuse). One settled promise serves all. */
const ALLOWED = Promise.resolve();
const allow: Authenticate = () => ALLOWED;

const OVERRIDE_REJECTION = { reason: "rejected by the service's auth override", fields: {} } as const;

function refuseOnFalse(verdict: unknown): void {
  if (verdict === false) throw new Rejection("rejected by the service's auth override");
}

/** The answer to a caller whose token lacks a scope the method's proto rule requires: the scopes are public (OpenAPI shows them). */
export function permissionDenied(missing: readonly string[]): GrpcError {
  return new GrpcError(Code.PERMISSION_DENIED, `permission denied: missing scope ${missing.join(" ")}`);
}

/**
 * The auth interceptor, first in the chain: calls it rejects never reach the timeout, the rate limiter
 * or the response-time log. Each is counted (`onRejected`) and leaves a warn line that names the reason,
 * never the credential; those lines are limited to a few a second, each saying how many were dropped
 * before it (`dropped`). A method's rule in its proto (`grpcsvc.v1.auth`, or its service's `default_auth`)
 * makes it public or requires token scopes (PERMISSION_DENIED without them); it is read once per method, here.
 * A service with an `authorize` override decides alone for its methods. Undefined (no chain entry) when auth is
 * off and no service overrides it; a method needing no check gets `next` itself.
 */
export function authInterceptor(
  config: Config,
  services: readonly AuthScope[] = [],
  onRejected?: OnRejected,
  keys?: RemoteKeySet,
): Interceptor | undefined {
  const global = authenticator(config, keys);
  const overrides = new Map(services.filter((s) => typeof s.authorize === "function").map((s) => [s.desc.typeName, s]));
  if (!global) warnUnenforcedScopes(services, overrides);
  if (!global && overrides.size === 0) return undefined;
  const authenticate = global ?? allow;
  const lines = new LineBudget(REJECTION_LINES_PER_SECOND);
  const rejected = (ctx: CallContext, path: string, err: unknown): GrpcError => {
    const { reason, fields } = err instanceof Rejection ? err : OVERRIDE_REJECTION;
    onRejected?.(path, REASON_LABEL[reason]);
    const dropped = lines.take();
    if (dropped !== undefined) ctx.logger.warn(dropped > 0 ? { ...fields, reason, dropped } : { ...fields, reason }, "unauthenticated");
    return unauthenticated();
  };
  return (next, method) => {
    const service = overrides.get(method.service);
    if (service) {
      return async (call) => {
        try {
          // The override's verdict awaited here, only when it is a promise: no promise of our own per call.
          const verdict = service.authorize!(call.ctx, authenticate);
          refuseOnFalse(verdict instanceof Promise ? await verdict : verdict);
        } catch (err) {
          throw rejected(call.ctx, method.path, err);
        }
        // Awaited: an async function returning a promise adopts it through one more job than an await takes.
        return await next(call);
      };
    }
    const rule = authRule(method.desc);
    if (!global || rule?.public) return next;
    const scopes = rule && rule.scopes.length > 0 ? rule.scopes : undefined;
    return async (call) => {
      try {
        await global(call.ctx);
      } catch (err) {
        throw rejected(call.ctx, method.path, err);
      }
      if (scopes) {
        const missing = missingScopes(call.ctx.claims, scopes);
        if (missing.length > 0) {
          const dropped = lines.take();
          if (dropped !== undefined) call.ctx.logger.warn(dropped > 0 ? { missing, dropped } : { missing }, "permission denied");
          throw permissionDenied(missing);
        }
      }
      return await next(call);
    };
  };
}

/** Scopes in the protos with no credential source configured: nobody's scopes can be checked, so every call is let in. */
function warnUnenforcedScopes(services: readonly AuthScope[], overrides: ReadonlyMap<string, AuthScope>): void {
  const scoped = services
    .filter((s) => !overrides.has(s.desc.typeName))
    .flatMap((s) => s.desc.methods)
    .filter((m) => (authRule(m)?.scopes.length ?? 0) > 0 && !authRule(m)?.public)
    .map((m) => `${m.parent.typeName}/${m.name}`);
  if (scoped.length > 0)
    rootLogger().warn(
      { methods: scoped },
      "these methods require token scopes in their proto, but authentication is off: anyone may call them",
    );
}
