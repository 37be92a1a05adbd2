import type { DescService } from "@bufbuild/protobuf";
import type { Authenticate } from "../auth/auth.js";
import type { CallContext } from "../call/context.js";
import type { ServiceHandlers } from "../call/handlers.js";
import type { Worker } from "../workers/worker.js";
import type { LifecycleHooks } from "./hooks.js";

export interface ServiceOptions<S extends DescService> extends LifecycleHooks {
  handlers: ServiceHandlers<S>;
  /**
   * Background functions run beside the handlers: started once the servers listen, restarted with
   * back-off when they throw, stopped on shutdown after the drain wait. See `every()` for periodic ones.
   */
  workers?: readonly Worker[];
  /**
   * Auth override: when present, it alone decides who may call this service's methods, whatever
   * JWT_SECRET and API_KEYS say; the global check runs only if it calls `authenticate(ctx)`, which
   * resolves when the settings' check passes (at once when auth is off) and puts the token's claims
   * on `ctx.claims`. Throw, or return false, to reject: the caller gets UNAUTHENTICATED "unauthenticated".
   * It runs first in the chain, once per call, with `ctx.method` telling which method is called.
   */
  authorize?(ctx: CallContext, authenticate: Authenticate): Promise<boolean | void> | boolean | void;
}

/** A service the framework serves: its descriptor, its handlers and its optional lifecycle hooks. */
export interface ServiceImpl<S extends DescService = DescService> extends ServiceOptions<S> {
  readonly desc: S;
}

/**
 * Binds handlers (and hooks) to a generated service descriptor:
 * `defineService(ExampleService, { handlers: { echo, countdown, fail }, postStart() {…} })`.
 */
export function defineService<S extends DescService>(desc: S, options: ServiceOptions<S>): ServiceImpl<S> {
  return { desc, ...options };
}
