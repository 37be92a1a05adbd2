import type { App } from "./app.js";

/**
 * Optional lifecycle hooks a service may implement. Start-up runs
 * `preStart` → servers listen → `postStart` → ready; shutdown runs
 * `preStop` → `failCheck(true)` → drain → servers stop → `stop` → `postStop`.
 */
export interface LifecycleHooks {
  /**
   * Before any server is created: open connections, run migrations, add interceptors
   * (`app.prepend`), register stream marshalers (`app.gateway.registerMarshaler`). A rejection aborts start-up.
   */
  preStart?(app: App): Promise<void> | void;
  /** After every server listens and before the service reports ready. */
  postStart?(): Promise<void> | void;
  /** First step of shutdown, while still ready: deregister, flush buffers. */
  preStop?(): Promise<void> | void;
  /** Called with `true` when shutdown begins and readiness starts failing. */
  failCheck?(failing: boolean): Promise<void> | void;
  /** After the servers have stopped: close what preStart opened. */
  stop?(): Promise<void> | void;
  /** Last step before the process exits. */
  postStop?(): Promise<void> | void;
}

export type HookName = keyof LifecycleHooks;
