import { SignJWT } from "jose";

export interface DevTokenOptions {
  secret: string;
  /** The `sub` claim (default `dev`). */
  subject?: string;
  issuer?: string;
  audience?: string;
  /** Lifetime in seconds (default one hour). */
  ttlSeconds?: number;
}

/** An HS256 JWT for development and tests, as `make token` prints it. Never for production callers. */
export function signDevToken(options: DevTokenOptions): Promise<string> {
  const jwt = new SignJWT({})
    .setProtectedHeader({ alg: "HS256", typ: "JWT" })
    .setSubject(options.subject ?? "dev")
    .setIssuedAt()
    .setExpirationTime(`${options.ttlSeconds ?? 3600}s`);
  if (options.issuer !== undefined) jwt.setIssuer(options.issuer);
  if (options.audience !== undefined) jwt.setAudience(options.audience);
  return jwt.sign(new TextEncoder().encode(options.secret));
}
