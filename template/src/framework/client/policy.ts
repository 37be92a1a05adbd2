import type { DescMethod, DescService } from "@bufbuild/protobuf";
import { MethodOptions_IdempotencyLevel } from "@bufbuild/protobuf/wkt";
import { Code } from "../call/status.js";

/** Retries after gRFC A6, done by grpc-js: a failed attempt with a retryable code is sent again after a back-off. */
export interface RetryPolicy {
  /** Attempts in all, first included: 1 turns retries off; at most 5 (gRFC A6). Default 3. */
  maxAttempts?: number;
  /** Back-off before the first retry, ms (default 100); each next one × `backoffMultiplier` (2), up to `maxBackoffMs` (1000); ±20 % jitter. */
  initialBackoffMs?: number;
  maxBackoffMs?: number;
  backoffMultiplier?: number;
  /** Codes retried (default UNAVAILABLE only: the code that says the request was not processed, so retrying is safe). */
  retryableCodes?: readonly Code[];
}

/**
 * Hedging after gRFC A6, done by grpc-js: the request is sent again every `delayMs` until one attempt answers or
 * `maxAttempts` are out; the first answer wins and the others are cancelled. Only for methods whose proto says
 * `option idempotency_level = IDEMPOTENT` or `NO_SIDE_EFFECTS` (the dependency may run the request more than once).
 * grpc-js does not charge hedges to the retry budget, so hedging multiplies the load on a slow dependency by up to
 * `maxAttempts`; the breaker still stops it once calls fail.
 */
export interface HedgingPolicy {
  /** Attempts in all, first included (2–5). */
  maxAttempts: number;
  /** Wait before each next attempt, ms: about the method's p95 latency, so hedges are ~5 % more load. */
  delayMs: number;
  /** Codes after which the next hedge is sent at once instead of failing the call (default none). */
  nonFatalCodes?: readonly Code[];
}

/** What one method does on failure: retries (default) or hedging, never both. */
export type MethodPolicy = { retry?: RetryPolicy | false; hedging?: never } | { hedging: HedgingPolicy; retry?: never };

/**
 * The retry budget (gRFC A6 retry throttling): a token bucket per target shared by every client of it in the
 * process; a failed attempt takes a token, a success gives `tokenRatio` back, and retries (not first attempts)
 * stop while half the bucket is empty. Default { maxTokens: 10, tokenRatio: 0.1 }: under a dependency failing
 * every call about 5 retries are made in all, then none (attempts → 1.0× calls); a dependency failing a share f of
 * attempts is retried while f < ~9 %, never at more than 1.1× calls (measured in test/framework/client-retry-budget).
 */
export interface RetryBudget {
  maxTokens: number;
  tokenRatio: number;
}

export const DEFAULT_RETRY: Required<RetryPolicy> = {
  maxAttempts: 3,
  initialBackoffMs: 100,
  maxBackoffMs: 1000,
  backoffMultiplier: 2,
  retryableCodes: [Code.UNAVAILABLE],
};
export const DEFAULT_BUDGET: RetryBudget = { maxTokens: 10, tokenRatio: 0.1 };

const SAFE_TO_HEDGE = new Set([MethodOptions_IdempotencyLevel.IDEMPOTENT, MethodOptions_IdempotencyLevel.NO_SIDE_EFFECTS]);

/** Seconds as a protobuf JSON Duration ("0.100s"), which grpc-js's service config parser wants. */
const seconds = (ms: number) => `${(ms / 1000).toFixed(3)}s`;

export interface ServiceConfigInput {
  service: DescService;
  retry: RetryPolicy | false;
  methods: Record<string, MethodPolicy | undefined>;
  budget: RetryBudget | false;
  loadBalancing: "round_robin" | "pick_first";
}

/**
 * The grpc-js service config (JSON) of a client: one method config per method with a policy of its own, one
 * for the rest of the service, the retry budget and the balancer. Throws on a policy gRFC A6 does not allow.
 */
export function serviceConfig(input: ServiceConfigInput): string {
  const methodConfig: object[] = [];
  for (const [localName, policy] of Object.entries(input.methods)) {
    if (!policy) continue;
    const method = input.service.methods.find((m) => m.localName === localName);
    if (!method) throw new Error(`client policy: ${input.service.typeName} has no method ${localName}`);
    methodConfig.push({ name: [{ service: input.service.typeName, method: method.name }], ...methodPolicy(method, policy, input.retry) });
  }
  methodConfig.push({ name: [{ service: input.service.typeName }], ...retryConfig(input.retry, input.service.typeName) });
  return JSON.stringify({
    loadBalancingConfig: [{ [input.loadBalancing]: {} }],
    methodConfig,
    ...(input.budget ? { retryThrottling: budgetConfig(input.budget) } : {}),
  });
}

function methodPolicy(method: DescMethod, policy: MethodPolicy, serviceRetry: RetryPolicy | false): object {
  const where = `${method.parent.typeName}/${method.name}`;
  if (policy.hedging) {
    if (!SAFE_TO_HEDGE.has(method.idempotency)) {
      throw new Error(
        `client policy: ${where} may not be hedged: its proto must say option idempotency_level = IDEMPOTENT or NO_SIDE_EFFECTS`,
      );
    }
    const h = policy.hedging;
    if (!(Number.isInteger(h.maxAttempts) && h.maxAttempts >= 2 && h.maxAttempts <= 5)) {
      throw new Error(`client policy: ${where} hedging.maxAttempts must be 2–5 (got ${h.maxAttempts})`);
    }
    if (!(h.delayMs >= 0)) throw new Error(`client policy: ${where} hedging.delayMs must be ≥ 0`);
    return {
      hedgingPolicy: { maxAttempts: h.maxAttempts, hedgingDelay: seconds(h.delayMs), nonFatalStatusCodes: [...(h.nonFatalCodes ?? [])] },
    };
  }
  return retryConfig(policy.retry === undefined ? serviceRetry : policy.retry, where);
}

function retryConfig(retry: RetryPolicy | false, where: string): object {
  if (retry === false) return {};
  const r = { ...DEFAULT_RETRY, ...retry };
  if (!(Number.isInteger(r.maxAttempts) && r.maxAttempts >= 1 && r.maxAttempts <= 5)) {
    throw new Error(`client policy: ${where} retry.maxAttempts must be 1–5 (got ${r.maxAttempts})`);
  }
  if (r.maxAttempts === 1) return {};
  if (!(r.initialBackoffMs > 0 && r.maxBackoffMs >= r.initialBackoffMs && r.backoffMultiplier > 0 && r.retryableCodes.length > 0)) {
    throw new Error(
      `client policy: ${where} retry needs initialBackoffMs > 0, maxBackoffMs ≥ initialBackoffMs, backoffMultiplier > 0 and a retryable code`,
    );
  }
  return {
    retryPolicy: {
      maxAttempts: r.maxAttempts,
      initialBackoff: seconds(r.initialBackoffMs),
      maxBackoff: seconds(r.maxBackoffMs),
      backoffMultiplier: r.backoffMultiplier,
      retryableStatusCodes: [...r.retryableCodes],
    },
  };
}

function budgetConfig(b: RetryBudget): object {
  if (!(b.maxTokens > 0 && b.maxTokens <= 1000 && b.tokenRatio > 0)) {
    throw new Error(`client policy: retry budget needs 0 < maxTokens ≤ 1000 and tokenRatio > 0 (got ${JSON.stringify(b)})`);
  }
  // grpc-js keeps three decimals of the ratio.
  return { maxTokens: b.maxTokens, tokenRatio: Math.round(b.tokenRatio * 1000) / 1000 };
}

/** The name a log line or error gives a method of a dependency: "inventory.v1.InventoryService/GetStock". */
export const methodPath = (method: DescMethod) => `${method.parent.typeName}/${method.name}`;
