import { loadConfigOrExit } from "../config/load.js";
import { settingTypos } from "../config/typos.js";
import { flushLogs, rootLogger } from "../logging/logger.js";
import { App } from "./app.js";
import type { ServiceImpl } from "./service.js";

export interface RunOptions {
  /**
   * Committed defaults for settings the environment leaves unset, e.g. `{ AUTH_REQUIRED: "true" }` (what
   * `create-grpc-svc --auth` writes): a fresh clone without `.env` then refuses to start instead of serving openly.
   */
  defaults?: Record<string, string>;
}

/**
 * The process entry point: validates the configuration, starts the app and stops it
 * gracefully on SIGTERM/SIGINT. A second signal exits at once with code 1.
 */
export async function run(services: ServiceImpl[], options: RunOptions = {}): Promise<App> {
  const app = new App({ services, config: loadConfigOrExit("config", process.env, options.defaults) });
  for (const { variable, suggestion } of settingTypos(process.env)) {
    app.log.warn({ variable, suggestion }, `unknown variable ${variable}: did you mean ${suggestion}?`);
  }
  let signalled = false;
  const onSignal = (signal: NodeJS.Signals) => {
    if (signalled) {
      app.log.warn({ signal }, "second signal: exiting now");
      flushLogs();
      process.exit(1);
    }
    signalled = true;
    // The drain takes seconds with nothing to show (GRPC_GRACEFUL_DURATION_IN_SECONDS): say how to skip it.
    app.log.info(
      { signal, budgetSeconds: app.config.SHUTDOWN_DURATION_IN_SECONDS },
      `signal received: stopping gracefully (at most ${app.config.SHUTDOWN_DURATION_IN_SECONDS} s); a second Ctrl-C or signal stops at once`,
    );
    // The app bounds every step by the budget; this catches what it cannot (a start-up stuck in preStart).
    const budgetMs = app.config.SHUTDOWN_DURATION_IN_SECONDS * 1000;
    setTimeout(() => {
      app.log.error({ budgetSeconds: app.config.SHUTDOWN_DURATION_IN_SECONDS }, "shutdown did not finish within the budget: exiting now");
      flushLogs();
      process.exit(1);
    }, budgetMs + 1000).unref();
    app.stop().then(
      () => process.exit(0),
      (err: unknown) => {
        app.log.error({ err }, "shutdown failed");
        flushLogs();
        process.exit(1);
      },
    );
  };
  process.on("SIGTERM", onSignal);
  process.on("SIGINT", onSignal);
  try {
    await app.start();
  } catch (err) {
    rootLogger().fatal({ err }, `start-up failed: ${(err as Error).message}`);
    flushLogs();
    process.exit(1);
  }
  return app;
}
