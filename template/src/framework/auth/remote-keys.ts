import { createRemoteJWKSet, errors, type JWTVerifyGetKey } from "jose";
import { keySetUrl } from "../config/parsers.js";
import type { Config } from "../config/schema.js";

/** Why a token could not be checked: the key set was never fetched, or fetching it failed a moment ago. */
export class KeySetUnavailable extends errors.JOSEError {
  static override code = "ERR_JWKS_UNAVAILABLE";
  override code = "ERR_JWKS_UNAVAILABLE";
}

/** How long calls fail fast after a fetch of an expired key set failed, instead of each trying again. */
const FAILED_FETCH_COOL_DOWN_MS = 5_000;
/** Start-up retries of discovery and the first fetch: from half a second, doubling, to at most 30 s apart. */
const FIRST_RETRY_MS = 500;
const MAX_RETRY_MS = 30_000;
const DISCOVERY_TIMEOUT_MS = 5_000;

type RemoteJwks = ReturnType<typeof createRemoteJWKSet>;

/** What the key set tells its owner: fetched for the first time, or a failed attempt (the start-up retries log it). */
export interface KeySetEvents {
  fetched(): void;
  failed(err: unknown, retryInMs: number): void;
}

/**
 * An identity provider's signing keys (JWT_JWKS_URL, or the `jwks_uri` of JWT_OIDC_ISSUER's discovery document),
 * through jose's remote key set: cached, fetched again on a `kid` it does not know (at most once per JWT_JWKS_COOL_DOWN_SECONDS) and once
 * the cache is 10 minutes old. A token whose key cannot be had is refused; nothing in a token (`jku`, `x5u`,
 * `jwk`) ever chooses where keys come from. Calls never trigger discovery: `start()` runs it, and the first
 * fetch, in the background with back-off, and readiness waits for `fetched`.
 */
export class RemoteKeySet {
  /** The `iss` every token must carry: the OIDC issuer; undefined with a plain JWKS URL (JWT_ISSUER applies). */
  readonly issuer: string | undefined;
  readonly #source: { jwks: URL } | { issuer: string };
  #jwks: RemoteJwks | undefined;
  #failedAt = Number.NEGATIVE_INFINITY;
  #fetched = false;
  #timer: NodeJS.Timeout | undefined;
  #stopped = false;
  readonly #abort = new AbortController();

  readonly #options: { cooldownDuration: number };

  constructor(source: { jwks: string } | { issuer: string }, coolDownSeconds = 30) {
    this.#options = { cooldownDuration: coolDownSeconds * 1000 };
    if ("issuer" in source) {
      this.#source = { issuer: source.issuer };
      this.issuer = source.issuer;
    } else this.#source = { jwks: new URL(source.jwks) };
    if ("jwks" in this.#source) this.#jwks = createRemoteJWKSet(this.#source.jwks, this.#options);
  }

  /** Whether the key set was fetched at least once. */
  get fetched(): boolean {
    return this.#fetched;
  }

  /** The key for a token's protected header, for jose's jwtVerify; rejects when there is none to be had. */
  readonly getKey: JWTVerifyGetKey = async (header, token) => {
    const jwks = this.#jwks;
    if (jwks === undefined) throw new KeySetUnavailable("the key set was not fetched yet");
    // An expired set whose last fetch failed a moment ago: fail fast, so a flood of tokens is not a flood of fetches.
    if (!jwks.fresh && performance.now() - this.#failedAt < FAILED_FETCH_COOL_DOWN_MS)
      throw new KeySetUnavailable("the key set could not be fetched");
    try {
      return await jwks(header, token);
    } catch (err) {
      if (!jwks.fresh) this.#failedAt = performance.now();
      throw err;
    }
  };

  /** Discovers (OIDC) and fetches the key set in the background, retrying with back-off until it has it once. */
  start(events: KeySetEvents): void {
    let delay = FIRST_RETRY_MS;
    const attempt = async () => {
      this.#timer = undefined;
      try {
        this.#jwks ??= createRemoteJWKSet(await this.#discover(), this.#options);
        await this.#jwks.reload();
        this.#fetched = true;
        events.fetched();
      } catch (err) {
        if (this.#stopped) return;
        const wait = Math.min(delay, MAX_RETRY_MS);
        delay *= 2;
        events.failed(err, wait);
        this.#timer = setTimeout(attempt, wait).unref();
      }
    };
    void attempt();
  }

  stop(): void {
    this.#stopped = true;
    clearTimeout(this.#timer);
    this.#abort.abort();
  }

  /** The `jwks_uri` of the issuer's discovery document, which must name the same issuer (OpenID Connect Discovery §4.3). */
  async #discover(): Promise<URL> {
    if ("jwks" in this.#source) return this.#source.jwks;
    const issuer = this.#source.issuer;
    const url = `${issuer.replace(/\/$/, "")}/.well-known/openid-configuration`;
    const signal = AbortSignal.any([this.#abort.signal, AbortSignal.timeout(DISCOVERY_TIMEOUT_MS)]);
    // No redirects: the document must come from the issuer itself.
    const res = await fetch(url, { redirect: "manual", signal, headers: { accept: "application/json" } });
    if (res.status !== 200) throw new Error(`${url} answered ${res.status}`);
    const doc = (await res.json()) as { issuer?: unknown; jwks_uri?: unknown };
    if (doc.issuer !== issuer) throw new Error(`${url} names the issuer ${JSON.stringify(doc.issuer)}, not ${issuer}`);
    if (typeof doc.jwks_uri !== "string") throw new Error(`${url} has no jwks_uri`);
    // The same rule as for JWT_JWKS_URL: https, or http to loopback.
    try {
      keySetUrl(doc.jwks_uri);
    } catch (err) {
      throw new Error(`${url}: jwks_uri ${doc.jwks_uri}: ${(err as Error).message}`);
    }
    return new URL(doc.jwks_uri);
  }
}

/** The key set the settings ask for (JWT_JWKS_URL or JWT_OIDC_ISSUER), or undefined. */
export function remoteKeySet(
  config: Pick<Config, "JWT_JWKS_URL" | "JWT_OIDC_ISSUER" | "JWT_JWKS_COOL_DOWN_SECONDS">,
): RemoteKeySet | undefined {
  const coolDown = config.JWT_JWKS_COOL_DOWN_SECONDS;
  if (config.JWT_OIDC_ISSUER !== undefined) return new RemoteKeySet({ issuer: config.JWT_OIDC_ISSUER }, coolDown);
  if (config.JWT_JWKS_URL !== undefined) return new RemoteKeySet({ jwks: config.JWT_JWKS_URL }, coolDown);
  return undefined;
}
