// Profiles the compiled service under the bench's load with its own /debug/pprof/profile endpoint,
// and prints where the CPU time went (bench/pprof-top.ts). Same pinning and load as `make bench`.
//
//   node --import tsx bench/profile.ts grpc|tcp|unix|in-process [seconds=10] [KEY=VALUE…]
//
// grpc loads the gRPC port with h2load; the others load POST /api/v1/echo with wrk in that gateway
// mode. KEY=VALUE pairs go to the service's environment (e.g. RESPONSE_TIME_LOG_ERROR_ONLY=true) to
// compare a configuration. The profile is kept as cpu-<target>.pb.gz in the current directory.
import { writeFileSync } from "node:fs";
import { checkGrpc, checkHttp, cleanup, h2load, machine, pin, type Run, startService, WARMUP, wrk } from "./lib.js";
import { format, summarise } from "./pprof-top.js";

const [target = "", secondsArg, ...pairs] = process.argv.slice(2);
const modes = ["tcp", "unix", "in-process"];
if (target !== "grpc" && !modes.includes(target)) throw new Error("usage: profile.ts grpc|tcp|unix|in-process [seconds] [KEY=VALUE…]");
const seconds = Number(secondsArg ?? 10);
const env = Object.fromEntries(pairs.map((p) => [p.slice(0, p.indexOf("=")), p.slice(p.indexOf("=") + 1)]));

try {
  process.stderr.write(`${machine(pin()).join("\n")}\n`);
  const server = await startService(`ours (${target})`, target === "grpc" ? env : { GATEWAY_MODE: target, ...env });
  const gateway = { ...server, port: server.httpPort };
  const load = (s: number): Promise<Run> => (target === "grpc" ? h2load(server, s) : wrk(gateway, "/api/v1/echo", s));
  if (target === "grpc") await checkGrpc(server);
  else await checkHttp(gateway, "/api/v1/echo");
  await load(WARMUP);
  const loaded = load(seconds + 2);
  await new Promise((r) => setTimeout(r, 1000));
  const res = await fetch(`http://127.0.0.1:${server.httpPort}/debug/pprof/profile?seconds=${seconds}`);
  if (res.status !== 200) throw new Error(`/debug/pprof/profile answered ${res.status}: ${await res.text()}`);
  const profile = new Uint8Array(await res.arrayBuffer());
  const r = await loaded;
  const file = `cpu-${target}.pb.gz`;
  writeFileSync(file, profile);
  const config = Object.keys(env).length ? ` with ${pairs.join(" ")}` : "";
  process.stdout.write(
    `\n${target}${config}: ${Math.round(r.rps)} req/s, p50 ${r.p50.toFixed(2)} ms, p99 ${r.p99.toFixed(2)} ms, ${Math.round(r.cpuUs)} µs CPU per request, ${r.errors} errors; profile in ${file}\n`,
  );
  process.stdout.write(`${format(summarise(profile, 30))}\n`);
} finally {
  await cleanup();
}
process.exit();
