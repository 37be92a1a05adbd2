// What each part of the chain costs per request: the compiled service with its defaults next to
// copies with one feature switched off through its configuration, measured in the same interleaved
// rounds as `make bench` (server CPU 0, load CPU 1). The CPU µs per request of each copy, less the
// default's, is that feature's cost. Each figure is the best of the rounds (the least CPU per request,
// the most req/s): other load on the machine only ever adds to CPU time, through cache misses and
// preemption, so the minimum is the figure least moved by it.
//
//   node --import tsx bench/ablation.ts grpc|tcp|unix|in-process
import { cleanup, h2load, machine, measure, pin, type Server, startService, wrk } from "./lib.js";

const target = process.argv[2] ?? "grpc";
if (!["grpc", "tcp", "unix", "in-process"].includes(target)) throw new Error("usage: ablation.ts grpc|tcp|unix|in-process");

/** One switch each; the names say what is off. */
const variants: [name: string, env: Record<string, string>][] = [
  ["defaults", {}],
  ["response-time log only for errors", { RESPONSE_TIME_LOG_ERROR_ONLY: "true" }],
  ["LOG_LEVEL=warn", { LOG_LEVEL: "warn" }],
  ["no default timeout", { GRPC_SERVER_DEFAULT_TIMEOUT_IN_SECONDS: "0" }],
  ["no proto validation", { DISABLE_PROTO_VALIDATE: "true" }],
  ["no metrics", { DISABLE_PROMETHEUS: "true" }],
  ["no debug-log interceptor", { DISABLE_DEBUG_LOG_INTERCEPTOR: "true" }],
  [
    "all of the above off",
    {
      LOG_LEVEL: "warn",
      GRPC_SERVER_DEFAULT_TIMEOUT_IN_SECONDS: "0",
      DISABLE_PROTO_VALIDATE: "true",
      DISABLE_PROMETHEUS: "true",
      DISABLE_DEBUG_LOG_INTERCEPTOR: "true",
    },
  ],
];

try {
  process.stderr.write(`${machine(pin()).join("\n")}\n`);
  const servers: Server[] = [];
  for (const [name, env] of variants) {
    const s = await startService(name, target === "grpc" ? env : { GATEWAY_MODE: target, ...env });
    servers.push(target === "grpc" ? s : { ...s, port: s.httpPort });
  }
  const results = await measure(servers, (s, seconds) => (target === "grpc" ? h2load(s, seconds) : wrk(s, "/api/v1/echo", seconds)));
  const best = (s: Server) => {
    const runs = results.get(s)!.runs;
    return { rps: Math.max(...runs.map((r) => r.rps)), cpuUs: Math.min(...runs.map((r) => r.cpuUs)) };
  };
  const base = best(servers[0]!);
  process.stdout.write(`\n${target === "grpc" ? "gRPC Echo (h2load)" : `POST /api/v1/echo, gateway ${target} (wrk)`}\n`);
  process.stdout.write(
    `${"variant".padEnd(36)}${"req/s".padStart(9)}${"cpu µs/req".padStart(12)}${"saved µs".padStart(10)}${"saved".padStart(8)}\n`,
  );
  for (const s of servers) {
    const m = best(s);
    const saved = base.cpuUs - m.cpuUs;
    process.stdout.write(
      `${s.name.padEnd(36)}${Math.round(m.rps).toString().padStart(9)}${m.cpuUs.toFixed(0).padStart(12)}${saved.toFixed(0).padStart(10)}${`${((100 * saved) / base.cpuUs).toFixed(0)}%`.padStart(8)}\n`,
    );
  }
} finally {
  await cleanup();
}
process.exit();
