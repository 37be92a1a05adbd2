// What serving client-streaming and bidi routes costs the gateway's other requests: such a route is
// matched before fastify reads the body (a preParsing hook), so every request of a service that has one
// goes through that hook. Unary POST /api/v1/echo through fastify's inject (no socket) and the
// in-process invoker with no interceptor, with the service's routes as they are (the hook is on) and
// with its request-streaming routes left out (no hook, the gateway as it was before them).
//
//   node --import tsx bench/gateway-routes.ts [trials=15]
//
// Variants alternate in short trials; each figure is the best trial, in µs of this process's CPU time per
// request (CPU time rather than wall time: other load on the machine then costs a trial much less).
import { Chain } from "../src/framework/call/chain.js";
import { loadConfig } from "../src/framework/config/load.js";
import { registerGateway } from "../src/framework/gateway/gateway.js";
import { inProcessInvoker } from "../src/framework/gateway/invoker.js";
import { Marshalers } from "../src/framework/gateway/marshalers.js";
import { compileRoutes, type GatewayRoute } from "../src/framework/gateway/routes.js";
import { createHttpServer } from "../src/framework/server/http-server.js";
import { bindMethods } from "../src/framework/server/methods.js";
import { serviceImpl } from "./proto.js";

const TRIALS = Number(process.argv[2] ?? 15);
const CALLS = 2_000;
const config = loadConfig({ DISABLE_HTTP_COMPRESSION: "true" });
const routes = compileRoutes(bindMethods([serviceImpl], new Chain([])));
if (!routes.some((r) => r.requestStream)) throw new Error("the service has no client-streaming or bidi route to compare with");

async function gateway(selected: readonly GatewayRoute[]) {
  const app = await createHttpServer(config);
  registerGateway(app, {
    routes: selected,
    invoker: inProcessInvoker(),
    headers: { traceHeader: config.TRACE_HEADER_NAME, debugHeader: config.DEBUG_LOG_HEADER_NAME, prefixes: [] },
    marshalers: new Marshalers({ sse: false }),
    heartbeatMs: 0,
    streamIdleMs: 0,
    maxMessageBytes: config.GRPC_MAX_RECV_MSG_SIZE,
  });
  await app.ready();
  const payload = '{"message":"The quick brown fox jumps over the lazy dog"}';
  const request = { method: "POST" as const, url: "/api/v1/echo", payload, headers: { "content-type": "application/json" } };
  return async () => {
    const start = process.cpuUsage();
    for (let i = 0; i < CALLS; i++) {
      const res = await app.inject(request);
      if (res.statusCode !== 200) throw new Error(`Echo answered ${res.statusCode}: ${res.body}`);
    }
    const used = process.cpuUsage(start);
    return (used.user + used.system) / CALLS;
  };
}

const variants: [string, () => Promise<number>][] = [
  ["with client-streaming and bidi routes (hook)", await gateway(routes)],
  ["without them (no hook)", await gateway(routes.filter((r) => !r.requestStream))],
];
const best = new Map<string, number>();
for (const [, run] of variants) await run(); // warm-up
for (let t = 0; t < TRIALS; t++) {
  for (const [name, run] of variants) best.set(name, Math.min(best.get(name) ?? Number.POSITIVE_INFINITY, await run()));
  process.stderr.write(`  · trial ${t + 1}/${TRIALS}\n`);
}
process.stdout.write(`\nPOST /api/v1/echo through fastify inject and the in-process invoker, best of ${TRIALS} trials of ${CALLS}\n`);
for (const [name] of variants) process.stdout.write(`  ${name.padEnd(48)}${best.get(name)!.toFixed(2).padStart(8)} µs CPU\n`);
process.exit();
