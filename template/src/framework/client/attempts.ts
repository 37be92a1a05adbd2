import type { Metadata } from "@grpc/grpc-js";

/** Set by grpc-js on the response metadata of a call it retried or hedged: how many attempts came before the one that answered. */
const PREVIOUS_ATTEMPTS = "grpc-previous-rpc-attempts";

/** Attempts before the one whose answer this metadata is (0: the first answered). */
export function previousAttempts(metadata: Metadata): number {
  const value = metadata.get(PREVIOUS_ATTEMPTS)[0];
  return value === undefined ? 0 : Number(value) || 0;
}

/** The number of the attempt whose answer this metadata is (1: the first). */
export function attemptsOf(metadata: Metadata): number {
  return previousAttempts(metadata) + 1;
}
