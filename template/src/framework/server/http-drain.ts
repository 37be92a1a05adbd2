import type { IncomingMessage, ServerResponse } from "node:http";
import type { FastifyInstance } from "fastify";

/**
 * From now on, every HTTP/1.1 response of `app` carries `Connection: close` and its connection closes after it
 * (Node's `shouldKeepAlive`), so keep-alive clients open a new connection for their next request. Called when
 * shutdown begins: the listener is added then, so requests before it pay nothing. HTTP/2 requests do not go
 * through this listener (Connection is not an HTTP/2 header): their sessions get GOAWAY when the server closes.
 */
export function closeAfterEachResponse(app: FastifyInstance): void {
  app.server.prependListener("request", (_req: IncomingMessage, res: ServerResponse) => {
    res.shouldKeepAlive = false;
  });
}
