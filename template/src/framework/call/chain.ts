import type { Call, CallResult, Interceptor, MethodInfo, Next } from "./types.js";

/** An interceptor with the name it has in the chain's order (logs, tests, `App.interceptors()`). */
export interface NamedInterceptor {
  readonly name: string;
  readonly interceptor: Interceptor;
}

export interface ChainOptions {
  /**
   * Wraps each composed method, custom interceptors included, and is not one of the names: the call's
   * entry into and exit from the server. The metrics count there, so a call the chain rejects (auth,
   * rate limit, validation, timeout) is counted with its final code.
   */
  around?: Interceptor | undefined;
}

/** The ordered interceptor list: open for prepending during initialisation, frozen once serving starts. */
export class Chain {
  #custom: NamedInterceptor[] = [];
  #frozen = false;
  readonly #defaults: NamedInterceptor[];
  readonly #around: Interceptor | undefined;

  constructor(defaults: NamedInterceptor[], options: ChainOptions = {}) {
    this.#defaults = defaults;
    this.#around = options.around;
  }

  /** Adds interceptors in front of the default chain (first argument outermost). Only before start-up completes. */
  prepend(...interceptors: NamedInterceptor[]): void {
    if (this.#frozen) throw new Error("interceptors can only be added during initialisation (before the servers start)");
    this.#custom = [...interceptors, ...this.#custom];
  }

  /** Whether interceptors were prepended to the defaults (which never change a response once the handler made it). */
  get customized(): boolean {
    return this.#custom.length > 0;
  }

  /** Names in call order, outermost first. */
  names(): string[] {
    return this.entries().map((e) => e.name);
  }

  entries(): NamedInterceptor[] {
    return [...this.#custom, ...this.#defaults];
  }

  /** Composes the chain around one method's handler; done once per method at start-up. */
  compose(method: MethodInfo, handler: Next): Next {
    this.#frozen = true;
    const chain = this.entries().reduceRight<Next>((next, { interceptor }) => {
      const step = interceptor(next, method);
      return step === next ? next : rejecting(step);
    }, rejecting(handler));
    return this.#around ? rejecting(this.#around(chain, method)) : chain;
  }
}

/**
 * Interceptors that need no `await` are plain functions (each async layer costs a promise per call) and
 * may throw; this turns such a throw into a rejection, so every `next` an interceptor calls returns a
 * promise and never throws.
 */
function rejecting(next: Next): Next {
  return (call) => {
    try {
      return next(call);
    } catch (err) {
      return Promise.reject(err);
    }
  };
}

/**
 * `next(call)` as a promise even if `next` throws: within a Chain it never does, but an interceptor may also
 * be composed by hand. For interceptors that react to the outcome with `.then` rather than an async
 * function (one frame and one await fewer per call).
 */
export function callNext(next: Next, call: Call): Promise<CallResult> {
  try {
    return next(call);
  } catch (err) {
    return Promise.reject(err);
  }
}
