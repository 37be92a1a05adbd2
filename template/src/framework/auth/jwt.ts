import { webcrypto } from "node:crypto";
import { type JWTVerifyOptions, jwtVerify } from "jose";
import type { Config } from "../config/schema.js";
import { rootLogger } from "../logging/logger.js";
import type { Claims } from "./claims.js";

/** Verifies a bearer token and returns its claims; rejects, with any error, when the token is not acceptable. */
export type TokenVerifier = (token: string) => Promise<Claims>;

/**
 * THE token validation function: the one place to change to accept other tokens. It runs once, at
 * start-up, and returns the verifier every call uses, or undefined when JWT authentication is off.
 *
 * By default: HS256 signed with `JWT_SECRET` (every other `alg`, `none` included, is rejected), `exp` required
 * (unless `JWT_REQUIRE_EXP=false`) and, with `nbf`, checked with `JWT_CLOCK_SKEW_SECONDS` of leeway, `iss` when `JWT_ISSUER` is set, `aud` when
 * `JWT_AUDIENCE` is set. To verify an identity provider's RS256/ES256 tokens instead, return e.g.
 *
 *   const jwks = createRemoteJWKSet(new URL("https://issuer.test/.well-known/jwks.json"));
 *   return async (token) => (await jwtVerify(token, jwks, { ...verifyOptions(config), algorithms: ["RS256"] })).payload;
 *
 * (docs/auth.md shows it whole).
 */
export function tokenVerifier(config: Config): TokenVerifier | undefined {
  if (config.JWT_SECRET === undefined) return undefined;
  if (Buffer.byteLength(config.JWT_SECRET, "utf8") < 32) {
    rootLogger().warn("JWT_SECRET is shorter than 32 bytes: use a random secret of at least 32 bytes (`openssl rand -base64 32`)");
  }
  return hs256Verifier(config.JWT_SECRET, verifyOptions(config));
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
