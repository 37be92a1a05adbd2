import { webcrypto } from "node:crypto";
import { decodeProtectedHeader, type JWTVerifyOptions, jwtVerify } from "jose";
import type { Config } from "../config/schema.js";
import { rootLogger } from "../logging/logger.js";
import type { Claims } from "./claims.js";
import type { RemoteKeySet } from "./remote-keys.js";

/** Verifies a bearer token and returns its claims; rejects, with any error, when the token is not acceptable. */
export type TokenVerifier = (token: string) => Promise<Claims>;

/**
 * THE token validation function: the one place to change to accept other tokens. It runs once, at
 * start-up, and returns the verifier every call uses, or undefined when JWT authentication is off.
 *
 * By default: HS256 signed with `JWT_SECRET`, and with JWT_JWKS_URL or JWT_OIDC_ISSUER (`keys`) the
 * JWT_ALGORITHMS (RS256, PS256, ES256, EdDSA) signed by a key of the provider's key set; every other `alg`,
 * `none` included, is rejected. With both on, the token's `alg` picks the key: an HS256 token is only ever
 * checked against the secret (never against a public key's bytes), an asymmetric one only against the key set.
 * `exp` is required (unless `JWT_REQUIRE_EXP=false`) and, with `nbf`, checked with `JWT_CLOCK_SKEW_SECONDS` of
 * leeway; `iss` when `JWT_ISSUER` is set (the OIDC issuer for the provider's tokens), `aud` when `JWT_AUDIENCE` is set.
 */
export function tokenVerifier(config: Config, keys?: RemoteKeySet): TokenVerifier | undefined {
  const hs256 = config.JWT_SECRET === undefined ? undefined : secretVerifier(config.JWT_SECRET, config);
  const remote = keys && keySetVerifier(keys, config);
  if (!hs256 || !remote) return hs256 ?? remote;
  return (token) => {
    const { alg } = decodeProtectedHeader(token);
    return alg === "HS256" ? hs256(token) : remote(token);
  };
}

function secretVerifier(secret: string, config: Config): TokenVerifier {
  if (Buffer.byteLength(secret, "utf8") < 32) {
    rootLogger().warn("JWT_SECRET is shorter than 32 bytes: use a random secret of at least 32 bytes (`openssl rand -base64 32`)");
  }
  return hs256Verifier(secret, verifyOptions(config));
}

/** Tokens signed by a key of the provider's set, with JWT_ALGORITHMS only (all asymmetric: an HMAC `alg` never gets here). */
export function keySetVerifier(keys: RemoteKeySet, config: Config): TokenVerifier {
  if (config.JWT_AUDIENCE === undefined) {
    // A provider issues tokens for many applications: without an audience check, each of them is accepted here.
    rootLogger().warn(
      "JWT_JWKS_URL/JWT_OIDC_ISSUER without JWT_AUDIENCE: a token the provider issued for any other application is accepted too; set JWT_AUDIENCE",
    );
  }
  const checks: JWTVerifyOptions = { ...verifyOptions(config), algorithms: [...config.JWT_ALGORITHMS] };
  if (keys.issuer !== undefined) checks.issuer = keys.issuer;
  return async (token) => (await jwtVerify(token, keys.getKey, checks)).payload as Claims;
}

/** The claim checks the settings ask for: `exp` present (unless JWT_REQUIRE_EXP=false), issuer, audience and clock leeway. */
export function verifyOptions(config: Config): JWTVerifyOptions {
  const options: JWTVerifyOptions = { algorithms: ["HS256"], clockTolerance: config.JWT_CLOCK_SKEW_SECONDS };
  // A token without `exp` would be valid forever: a leaked one could never be taken back.
  if (config.JWT_REQUIRE_EXP) options.requiredClaims = ["exp"];
  if (config.JWT_ISSUER !== undefined) options.issuer = config.JWT_ISSUER;
  if (config.JWT_AUDIENCE !== undefined) options.audience = config.JWT_AUDIENCE;
  return options;
}

/** HS256 tokens signed with `secret`. The key is imported once, here, not per call. */
export function hs256Verifier(secret: string, options: JWTVerifyOptions): TokenVerifier {
  // A non-extractable HMAC-SHA-256 key: even if `algorithms` were widened, it could verify HS256 only.
  const key = webcrypto.subtle.importKey("raw", new TextEncoder().encode(secret), { name: "HMAC", hash: "SHA-256" }, false, ["verify"]);
  const checks: JWTVerifyOptions = { ...options, algorithms: ["HS256"] };
  return async (token) => (await jwtVerify(token, await key, checks)).payload as Claims;
}
