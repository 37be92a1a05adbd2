import type { FastifyInstance } from "fastify";
import { Code } from "../call/status.js";
import { statusJson } from "../errors/wire.js";
import type { BuildInfo } from "./build-info.js";
import type { Readiness } from "./readiness.js";

/** Liveness and readiness: both return the build metadata; readiness is 503 until ready and from shutdown on. */
export function registerHealthRoutes(app: FastifyInstance, info: BuildInfo, readiness: Readiness): void {
  const body = JSON.stringify(info); // never changes: serialise once
  const notReady = statusJson(Code.UNAVAILABLE, "not ready", []);
  app.get("/healthcheck", (_req, reply) => reply.type("application/json").send(body));
  app.get("/readycheck", (_req, reply) =>
    readiness.ready ? reply.type("application/json").send(body) : reply.code(503).type("application/json").send(notReady),
  );
}
