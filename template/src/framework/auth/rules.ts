import { type DescMethod, getOption, hasOption } from "@bufbuild/protobuf";
import { auth, default_auth } from "../../gen/grpcsvc/v1/options_pb.js";

/** A method's rule from its proto: `(grpcsvc.v1.auth)`, else its service's `(grpcsvc.v1.default_auth)`. */
export interface AuthRule {
  /** Callable without credentials while auth is on. */
  readonly public: boolean;
  /** Token scopes the caller must all have (empty: none). */
  readonly scopes: readonly string[];
}

/** The method's rule, read from its descriptor (once, when the chain is built); undefined when its proto sets none. */
export function authRule(method: DescMethod): AuthRule | undefined {
  const rule = hasOption(method, auth)
    ? getOption(method, auth)
    : hasOption(method.parent, default_auth)
      ? getOption(method.parent, default_auth)
      : undefined;
  return rule && { public: rule.public, scopes: Object.freeze([...new Set(rule.scopes)]) };
}

/** The scopes a token grants: its `scope` claim (space-separated, RFC 8693) and `scp` claim (a list, or space-separated). */
function grantedScopes(claims: Readonly<Record<string, unknown>>): Set<string> {
  const granted = new Set<string>();
  for (const claim of [claims.scope, claims.scp]) {
    const values = typeof claim === "string" ? claim.split(" ") : Array.isArray(claim) ? claim : [];
    for (const v of values) if (typeof v === "string" && v !== "") granted.add(v);
  }
  return granted;
}

/** The required scopes the claims lack (all of them when there are no claims: an API key, or no token). */
export function missingScopes(claims: Readonly<Record<string, unknown>> | undefined, required: readonly string[]): string[] {
  if (claims === undefined) return [...required];
  const granted = grantedScopes(claims);
  return required.filter((s) => !granted.has(s));
}
