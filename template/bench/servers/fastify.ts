// Reference: a bare fastify route doing the same JSON echo as the gateway's POST /api/v1/echo
// (fastify's own JSON body parser and serialiser, the same response fields).
import { randomUUID } from "node:crypto";
import Fastify from "fastify";
import { port, serve } from "./common.js";

interface Body {
  message?: string;
  traceId?: string;
}

const app = Fastify({ logger: false });
app.post<{ Body: Body }>("/api/v1/echo", async (req) => ({
  message: req.body.message ?? "",
  traceId: req.body.traceId || randomUUID(),
  receivedAt: new Date().toISOString(),
}));
await app.listen({ host: "127.0.0.1", port: port() });
serve(port());
