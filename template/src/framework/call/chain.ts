import type { Call, CallResult, Interceptor, MethodInfo, Next } from "./types.js";

/**
 * What an interceptor that only looks at a unary call does, split around its call to `next`: `enter` before it
 * (a throw fails the call), then `answered` or `failed` once the rest of the chain settled. The chain runs
 * consecutive stages in one frame with one promise reaction (`Chain.compose`), instead of a frame, a promise
 * and two closures per interceptor; alone, a stage runs the same way around `next`. Exactly as nested
 * interceptors: the stages outside one that fails see its error, the inner ones never started, and the exits
 * run innermost first.
 */
export interface Stage {
  /** Before the rest of the chain; a throw fails the call. */
  readonly enter?: ((call: Call) => void) | undefined;
  /** The exits want `start`: `performance.now()` when this stage is entered. */
  readonly timed?: boolean | undefined;
  /** The rest of the chain answered with `result` (a throw here fails the call). */
  readonly answered?: ((call: Call, result: CallResult, start: number) => void) | undefined;
  /** The rest of the chain failed with `error`: returns the error the call fails with (the same one, or another). */
  readonly failed?: ((call: Call, error: unknown, start: number) => unknown) | undefined;
}

/**
 * An interceptor that, for some methods, is a Stage: `stage(method)` returns it, or undefined where the
 * interceptor's own function serves the method (e.g. streams). Made by `staged`.
 */
export interface StagedInterceptor extends Interceptor {
  readonly stage: (method: MethodInfo) => Stage | undefined;
}

/** The interceptor of `stageOf`'s stages, falling back to `otherwise` for the methods it gives none. */
export function staged(stageOf: (method: MethodInfo) => Stage | undefined, otherwise: Interceptor): StagedInterceptor {
  const interceptor: Interceptor = (next, method) => {
    const stage = stageOf(method);
    return stage === undefined ? otherwise(next, method) : runStages([stage], next);
  };
  return Object.assign(interceptor, { stage: stageOf });
}

/** Does nothing: a stage for a method the interceptor skips (the `return next` of a plain interceptor). */
export const SKIP: Stage = Object.freeze({});

/** A stage with every hook present (undefined where absent): the runner's loops then read one object shape. */
class Hooks implements Stage {
  readonly enter: ((call: Call) => void) | undefined;
  readonly timed: boolean;
  readonly answered: ((call: Call, result: CallResult, start: number) => void) | undefined;
  readonly failed: ((call: Call, error: unknown, start: number) => unknown) | undefined;
  constructor(stage: Stage) {
    this.enter = stage.enter;
    this.timed = stage.timed === true;
    this.answered = stage.answered;
    this.failed = stage.failed;
  }
}

/** The stages, outermost first, run around `next` in one frame; stages with no hook at all are dropped. */
function runStages(stages: readonly Stage[], next: Next): Next {
  const hooks = stages.filter((s) => s.enter || s.answered || s.failed).map((s) => new Hooks(s));
  if (hooks.length === 0) return next;
  const n = hooks.length;
  /** The exits of the stages [0, upTo) see `error`, innermost first; what the outermost returns fails the call. */
  const fail = (call: Call, error: unknown, upTo: number, start: number): unknown => {
    for (let i = upTo - 1; i >= 0; i--) {
      const failed = hooks[i]!.failed;
      if (failed === undefined) continue;
      try {
        error = failed(call, error, start);
      } catch (err) {
        error = err;
      }
    }
    return error;
  };
  const answer = (call: Call, result: CallResult, start: number): CallResult => {
    for (let i = n - 1; i >= 0; i--) {
      const answered = hooks[i]!.answered;
      if (answered === undefined) continue;
      try {
        answered(call, result, start);
      } catch (err) {
        throw fail(call, err, i, start);
      }
    }
    return result;
  };
  return (call) => {
    let start = 0;
    let i = 0;
    try {
      for (; i < n; i++) {
        const h = hooks[i]!;
        if (h.timed) start = performance.now();
        if (h.enter !== undefined) h.enter(call);
      }
    } catch (err) {
      return Promise.reject(fail(call, err, i, start));
    }
    return callNext(next, call).then(
      (result) => answer(call, result, start),
      (err: unknown) => {
        throw fail(call, err, n, start);
      },
    );
  };
}

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

  /**
   * Composes the chain around one method's handler; done once per method at start-up. Consecutive
   * interceptors that are stages for this method (see Stage) run together, in one frame.
   */
  compose(method: MethodInfo, handler: Next): Next {
    this.#frozen = true;
    let next = rejecting(handler);
    /** Stages met since the last plain interceptor, innermost first. */
    let stages: Stage[] = [];
    const flush = () => {
      if (stages.length > 0) next = runStages(stages.reverse(), next);
      stages = [];
    };
    const entries = this.entries();
    for (let i = entries.length - 1; i >= 0; i--) {
      const { interceptor } = entries[i]!;
      const stage = (interceptor as Partial<StagedInterceptor>).stage?.(method);
      if (stage !== undefined) {
        stages.push(stage);
        continue;
      }
      flush();
      const step = interceptor(next, method);
      if (step !== next) next = rejecting(step);
    }
    flush();
    return this.#around ? rejecting(this.#around(next, method)) : next;
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
