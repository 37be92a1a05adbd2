// `make bench`: loads this service's own RPCs, compiled (dist/main.js, what the image runs), and compares with the
// last saved baseline. Each unary method is called over gRPC with h2load and, when it has a google.api.http
// route, over HTTP with wrk: requests/s, p50 and p99. The request each method gets is `{}` unless
// scripts/bench-requests.json gives one (keyed `package.Service/Method`, in the method's JSON form); one call
// per method is checked first, so a method that answers an error is named rather than measured unawares.
// The first run saves its figures to .bench-baseline.json; later runs print each figure beside the baseline's
// (BENCH_SAVE=1 saves the new ones instead). Streaming methods are not loaded here.
//
// Settings (environment): BENCH_SECONDS per measurement (10), BENCH_CONNECTIONS (8), BENCH_STREAMS (gRPC
// calls in flight per connection, 16). Authentication is off during the bench (JWT_SECRET and API_KEYS empty):
// it measures the service, not the credentials. Needs h2load and wrk (Debian: nghttp2-client, wrk).
import { type ChildProcess, spawn, spawnSync } from "node:child_process";
import fs from "node:fs";
import net from "node:net";
import os from "node:os";
import path from "node:path";
import { type DescMethod, type DescService, fromJson, getOption, type JsonValue, toBinary } from "@bufbuild/protobuf";
import { http } from "../src/gen/google/api/annotations_pb.js";

const ROOT = path.resolve(import.meta.dirname, "..");
const SECONDS = Number(process.env.BENCH_SECONDS ?? 10);
const CONNECTIONS = Number(process.env.BENCH_CONNECTIONS ?? 8);
const STREAMS = Number(process.env.BENCH_STREAMS ?? 16);
const BASELINE = path.join(ROOT, ".bench-baseline.json");
const REQUESTS = path.join(ROOT, "scripts/bench-requests.json");
/** Generated code of the vendored protos: not this service's API. */
const VENDORED = /^(google|grpc|buf)\//;

export interface Row {
  name: string;
  rps: number;
  p50Ms: number;
  p99Ms: number;
  errors: number;
}

/** Every service the repo's own protos define, from the generated code in src/gen/. */
export async function ownServices(genDir = path.join(ROOT, "src/gen")): Promise<DescService[]> {
  const files = (fs.readdirSync(genDir, { recursive: true, encoding: "utf8" }) as string[])
    .map((f) => f.replaceAll("\\", "/"))
    .filter((f) => f.endsWith("_pb.ts") && !VENDORED.test(f))
    .sort();
  const services: DescService[] = [];
  for (const f of files) {
    const mod = (await import(path.join(genDir, f))) as Record<string, unknown>;
    for (const v of Object.values(mod)) if ((v as DescService | undefined)?.kind === "service") services.push(v as DescService);
  }
  return services;
}

/** The HTTP route of a method (its first binding) with the path's `{field}`s filled from the request. */
export function httpRoute(
  m: DescMethod,
  json: Record<string, JsonValue>,
): { verb: string; path: string; body: string | undefined } | undefined {
  const rule = getOption(m, http);
  if (rule.pattern.case === undefined || rule.pattern.case === "custom") return undefined;
  const verb = rule.pattern.case.toUpperCase();
  const filled = rule.pattern.value.replace(/\{([^}=]+)(=[^}]*)?\}/g, (_, name: string) => {
    const field = m.input.fields.find((f) => f.name === name || f.jsonName === name);
    const value = json[field?.jsonName ?? name] ?? json[name] ?? "x";
    return encodeURIComponent(String(value));
  });
  let body: string | undefined;
  if (rule.body === "*") body = JSON.stringify(json);
  else if (rule.body !== "") body = JSON.stringify(json[m.input.fields.find((f) => f.name === rule.body)?.jsonName ?? rule.body] ?? {});
  return { verb, path: filled, body };
}

function tool(name: string, args: string[], pkg: string): void {
  if (spawnSync(name, args).error) {
    console.error(
      `make bench needs ${name}: install it (Debian/Ubuntu: apt-get install ${pkg}; macOS: brew install ${pkg === "nghttp2-client" ? "nghttp2" : pkg})`,
    );
    process.exit(1);
  }
}

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const s = net.createServer().listen(0, "127.0.0.1", () => {
      const { port } = s.address() as net.AddressInfo;
      s.close(() => resolve(port));
    });
    s.on("error", reject);
  });
}

function run(cmd: string, args: string[], env: NodeJS.ProcessEnv = process.env): Promise<string> {
  return new Promise((resolve, reject) => {
    const child = spawn(cmd, args, { env, stdio: ["ignore", "pipe", "pipe"] });
    let out = "";
    child.stdout.on("data", (d) => (out += d));
    child.stderr.on("data", (d) => (out += d));
    child.on("error", reject);
    child.on("close", (code) => (code === 0 ? resolve(out) : reject(new Error(`${cmd} exited ${code}: ${out.slice(-500)}`))));
  });
}

const percentile = (sorted: number[], p: number) => sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))] ?? 0;

async function h2load(url: string, frame: Buffer, dir: string): Promise<Omit<Row, "name">> {
  const data = path.join(dir, "request.bin");
  const log = path.join(dir, "h2load.log");
  fs.writeFileSync(data, frame);
  fs.rmSync(log, { force: true });
  const out = await run("h2load", [
    ...["-D", String(SECONDS), "-c", String(CONNECTIONS), "-m", String(STREAMS), "-t", "1"],
    ...["-d", data, "-H", "content-type: application/grpc", "-H", "te: trailers", `--log-file=${log}`, url],
  ]);
  const lines = fs.readFileSync(log, "utf8").trim().split("\n").filter(Boolean);
  const us = lines.map((l) => Number(l.split("\t")[2])).sort((a, b) => a - b);
  const failed = /requests: .* (\d+) failed, (\d+) errored/.exec(out);
  return {
    rps: lines.length / SECONDS,
    p50Ms: percentile(us, 50) / 1000,
    p99Ms: percentile(us, 99) / 1000,
    errors: Number(failed?.[1] ?? 0) + Number(failed?.[2] ?? 0),
  };
}

async function wrk(url: string, verb: string, body: string | undefined, dir: string): Promise<Omit<Row, "name">> {
  const script = path.join(dir, "request.lua");
  fs.writeFileSync(
    script,
    [
      `wrk.method = ${JSON.stringify(verb)}`,
      ...(body === undefined ? [] : [`wrk.body = ${JSON.stringify(body)}`, `wrk.headers["Content-Type"] = "application/json"`]),
      "function done(summary, latency)",
      '  io.write(string.format("BENCH %d %d %d %d\\n", summary.requests, latency:percentile(50), latency:percentile(99), summary.errors.status + summary.errors.connect + summary.errors.read + summary.errors.write + summary.errors.timeout))',
      "end",
    ].join("\n"),
  );
  const out = await run("wrk", ["-t", "1", "-c", String(CONNECTIONS), "-d", `${SECONDS}s`, "-s", script, url]);
  const m = /BENCH (\d+) (\d+) (\d+) (\d+)/.exec(out);
  if (!m) throw new Error(`wrk printed no result: ${out}`);
  return { rps: Number(m[1]) / SECONDS, p50Ms: Number(m[2]) / 1000, p99Ms: Number(m[3]) / 1000, errors: Number(m[4]) };
}

/** One call through the Connect protocol (JSON) on the HTTP port: its gRPC status name, or "ok". */
async function check(httpUrl: string, m: DescMethod, json: JsonValue): Promise<string> {
  const res = await fetch(`${httpUrl}/${m.parent.typeName}/${m.name}`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify(json),
  });
  if (res.ok) return "ok";
  const err = (await res.json().catch(() => ({}))) as { code?: string; message?: string };
  return `${err.code ?? res.status}: ${err.message ?? ""}`;
}

export function comparison(rows: Row[], baseline: Row[] | undefined): string {
  const base = new Map((baseline ?? []).map((r) => [r.name, r]));
  const ratio = (now: number, then: number | undefined) => (then ? ` (${(now / then).toFixed(2)}x)` : "");
  const lines = [`${"".padEnd(56)} ${"req/s".padStart(16)} ${"p50 ms".padStart(14)} ${"p99 ms".padStart(14)}  errors`];
  for (const r of rows) {
    const b = base.get(r.name);
    lines.push(
      `${r.name.padEnd(56)} ${`${r.rps.toFixed(0)}${ratio(r.rps, b?.rps)}`.padStart(16)} ${`${r.p50Ms.toFixed(2)}${ratio(r.p50Ms, b?.p50Ms)}`.padStart(14)} ${`${r.p99Ms.toFixed(2)}${ratio(r.p99Ms, b?.p99Ms)}`.padStart(14)}  ${r.errors}`,
    );
  }
  return lines.join("\n");
}

async function main(): Promise<void> {
  tool("h2load", ["--version"], "nghttp2-client");
  tool("wrk", ["-v"], "wrk");
  const samples = (fs.existsSync(REQUESTS) ? JSON.parse(fs.readFileSync(REQUESTS, "utf8")) : {}) as Record<string, JsonValue>;
  const methods = (await ownServices()).flatMap((s) => s.methods).filter((m) => m.methodKind === "unary");
  if (methods.length === 0) throw new Error("no unary method in this repository's protos to load");

  const [grpcPort, httpPort] = [await freePort(), await freePort()];
  const env = {
    ...process.env,
    GRPC_PORT: String(grpcPort),
    HTTP_PORT: String(httpPort),
    ADMIN_PORT: "",
    LISTEN_HOST: "127.0.0.1",
    LOG_LEVEL: "warn",
    LOG_FORMAT: "json",
    JWT_SECRET: "",
    API_KEYS: "",
    RATE_LIMIT_PER_SECOND: "0",
    // A closed loop at capacity on a developer's machine, beside an editor and a browser, is the load this
    // measures, not an overload to shed: the event-loop checks would turn its slow moments into errors.
    OVERLOAD_MAX_EVENT_LOOP_DELAY_MS: "0",
    OVERLOAD_MAX_EVENT_LOOP_UTILIZATION: "0",
  };
  const httpUrl = `http://127.0.0.1:${httpPort}`;
  const service: ChildProcess = spawn(process.execPath, ["--env-file-if-exists=.env", "dist/main.js"], {
    cwd: ROOT,
    env,
    stdio: ["ignore", "ignore", "inherit"],
  });
  const stop = () => service.exitCode === null && service.kill("SIGKILL");
  process.on("exit", stop);
  for (const signal of ["SIGINT", "SIGTERM"] as const) process.on(signal, () => process.exit(130));
  const ready = Date.now() + 30_000;
  for (;;) {
    if (service.exitCode !== null) throw new Error(`the service exited (${service.exitCode}) before it was ready`);
    if ((await fetch(`${httpUrl}/readycheck`).catch(() => undefined))?.ok) break;
    if (Date.now() > ready) throw new Error("the service was not ready within 30 s");
    await new Promise((r) => setTimeout(r, 100));
  }

  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "bench-"));
  const rows: Row[] = [];
  try {
    for (const m of methods) {
      const key = `${m.parent.typeName}/${m.name}`;
      const json = (samples[key] ?? {}) as Record<string, JsonValue>;
      const status = await check(httpUrl, m, json);
      if (status !== "ok")
        console.error(
          `${key} answers ${status} to ${JSON.stringify(json)}: measured anyway; give it a request in scripts/bench-requests.json`,
        );
      const message = toBinary(m.input, fromJson(m.input, json));
      const frame = Buffer.concat([Buffer.from([0, 0, 0, 0, 0]), message]);
      frame.writeUInt32BE(message.length, 1);
      console.error(`gRPC ${key}…`);
      rows.push({ name: `gRPC ${key}`, ...(await h2load(`http://127.0.0.1:${grpcPort}/${key}`, frame, dir)) });
      const route = httpRoute(m, json);
      if (route) {
        console.error(`HTTP ${route.verb} ${route.path}…`);
        rows.push({ name: `HTTP ${route.verb} ${route.path}`, ...(await wrk(`${httpUrl}${route.path}`, route.verb, route.body, dir)) });
      }
    }
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
    stop();
  }
  const baseline = fs.existsSync(BASELINE) ? (JSON.parse(fs.readFileSync(BASELINE, "utf8")) as { rows: Row[] }).rows : undefined;
  console.log(comparison(rows, baseline));
  if (baseline === undefined || process.env.BENCH_SAVE === "1") {
    fs.writeFileSync(
      BASELINE,
      `${JSON.stringify({ date: new Date().toISOString(), host: os.hostname(), cpus: os.cpus().length, rows }, null, 2)}\n`,
    );
    console.log(`saved as the baseline in ${path.relative(ROOT, BASELINE)}: the next run compares with it (BENCH_SAVE=1 replaces it)`);
  } else {
    console.log(`(×: this run ÷ the baseline in ${path.relative(ROOT, BASELINE)}; BENCH_SAVE=1 replaces it)`);
  }
}

if (process.argv[1] === import.meta.filename) {
  main().catch((err: Error) => {
    console.error(`make bench failed: ${err.message}`);
    process.exit(1);
  });
}
