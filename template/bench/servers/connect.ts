// The peer: @connectrpc/connect-node serving the same protobuf-es service (Echo, and Sum for ab.ts) with the same
// handlers. `grpc` serves HTTP/2 without TLS (gRPC for h2load); `json` serves HTTP/1.1 (Connect JSON for wrk).
import http from "node:http";
import http2 from "node:http2";
import type { ConnectRouter, Interceptor } from "@connectrpc/connect";
import { connectNodeAdapter } from "@connectrpc/connect-node";
import { Service } from "../proto.js";
import { counts, echo, port, serve, sum } from "./common.js";

const countErrors: Interceptor = (next) => async (req) => {
  try {
    return await next(req);
  } catch (err) {
    counts.errors++;
    throw err;
  }
};

const handler = connectNodeAdapter({
  interceptors: [countErrors],
  routes: (router: ConnectRouter) =>
    router.service(Service, {
      async echo(request) {
        counts.ok++;
        return echo(request);
      },
      // For bench/ab.ts connect-stream.
      async sum(requests) {
        const total = await sum(requests);
        counts.ok++;
        return total;
      },
    }),
});

const mode = process.argv[2];
if (mode !== "grpc" && mode !== "json") throw new Error("usage: connect.ts grpc|json");
const server = mode === "grpc" ? http2.createServer(handler) : http.createServer(handler);
server.listen(port(), "127.0.0.1", () => serve(port()));
