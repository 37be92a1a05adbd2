import type { CallContext } from "../call/context.js";
import { Code, GrpcError } from "../call/status.js";

/** The verified claims of a JWT: the registered ones typed, any other claim as `unknown`. */
export interface Claims {
  /** The subject: who the token was issued to. */
  readonly sub?: string;
  readonly iss?: string;
  readonly aud?: string | string[];
  readonly exp?: number;
  readonly nbf?: number;
  readonly iat?: number;
  readonly jti?: string;
  readonly [claim: string]: unknown;
}

/**
 * The verified claims of the call, or undefined when it carried none: authentication is off,
 * the caller used an API key, or a service auth override let the call in without a token.
 */
export function claimsOf(ctx: CallContext): Claims | undefined {
  return ctx.claims as Claims | undefined;
}

/**
 * The verified claims of the call, for handlers that cannot work without a caller.
 * Throws INTERNAL "missing claims" when there are none: the handler was reached without a token,
 * which means the auth configuration does not match what the handler expects.
 */
export function requireClaims(ctx: CallContext): Claims {
  const claims = claimsOf(ctx);
  if (claims === undefined) throw new GrpcError(Code.INTERNAL, "missing claims");
  return claims;
}
