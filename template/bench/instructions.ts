// Instructions per request of the compiled service, counted by valgrind's callgrind: unlike time, the
// count barely moves with other load on the machine, so small hot-path changes can be compared on a
// busy one. The service runs under callgrind (30-100× slower), gets a warm-up, then its counters are
// zeroed, N requests are sent, and the count is dumped and divided by N.
//
//   node --import tsx bench/instructions.ts http|fastify [dist=dist] [requests=2000] [warmup=3000] [KEY=VALUE…]
//
// http: POST /api/v1/echo to the service (GATEWAY_MODE=in-process unless given); fastify: the same to
// the bare fastify reference (bench/servers/fastify.ts). 8 keep-alive connections.
import { execFileSync, spawn } from "node:child_process";
import { readFileSync } from "node:fs";
import { Agent, request } from "node:http";
import os from "node:os";
import path from "node:path";
import { baseEnv, freePort, HTTP_BODY, ROOT, sleep } from "./lib.js";

const [target = "", dist = "dist", nArg, warmArg, ...pairs] = process.argv.slice(2);
if (target !== "http" && target !== "fastify")
  throw new Error("usage: instructions.ts http|fastify [dist] [requests] [warmup] [KEY=VALUE…]");
const N = Number(nArg ?? 2000);
const WARM = Number(warmArg ?? 3000);
const env = Object.fromEntries(pairs.map((p) => [p.slice(0, p.indexOf("=")), p.slice(p.indexOf("=") + 1)]));

const port = await freePort();
const out = path.join(os.tmpdir(), `callgrind-${process.pid}.out`);
const args = target === "http" ? [path.join(dist, "main.js")] : ["--import", "tsx", path.join("bench", "servers", "fastify.ts")];
const serverEnv =
  target === "http"
    ? { GATEWAY_MODE: "in-process", GRPC_PORT: String(await freePort()), HTTP_PORT: String(port), ...env }
    : { PORT: String(port), ...env };
const child = spawn("valgrind", ["--tool=callgrind", `--callgrind-out-file=${out}`, process.execPath, ...args], {
  cwd: ROOT,
  env: baseEnv(serverEnv),
  stdio: ["ignore", "ignore", "inherit", ...(target === "fastify" ? (["ipc"] as const) : [])],
});

const agent = new Agent({ keepAlive: true, maxSockets: 8 });
function post(): Promise<number> {
  return new Promise((resolve, reject) => {
    const req = request(
      { port, host: "127.0.0.1", method: "POST", path: "/api/v1/echo", agent, headers: { "content-type": "application/json" } },
      (res) => {
        res.resume();
        res.on("end", () => resolve(res.statusCode ?? 0));
      },
    );
    req.on("error", reject);
    req.end(HTTP_BODY);
  });
}
async function send(n: number): Promise<void> {
  let next = 0;
  const worker = async () => {
    while (next++ < n) {
      const status = await post();
      if (status !== 200) throw new Error(`status ${status}`);
    }
  };
  await Promise.all(Array.from({ length: 8 }, worker));
}

try {
  for (;;) {
    if (child.exitCode !== null) throw new Error("the server exited");
    if (
      await post().then(
        (s) => s === 200,
        () => false,
      )
    )
      break;
    await sleep(500);
  }
  await send(WARM);
  execFileSync("callgrind_control", ["-z", String(child.pid)], { stdio: "ignore" });
  await send(N);
  execFileSync("callgrind_control", ["-d", String(child.pid)], { stdio: "ignore" });
  await sleep(500);
  const dumps = readFileSync(execFileSync("sh", ["-c", `ls -t ${out}* | head -1`], { encoding: "utf8" }).trim(), "utf8");
  const total = Number(/^summary:\s+(\d+)/m.exec(dumps)?.[1] ?? /^totals:\s+(\d+)/m.exec(dumps)?.[1]);
  process.stdout.write(
    `${target} ${dist} ${Object.keys(env).length ? pairs.join(" ") : ""}: ${(total / N / 1000).toFixed(1)} k instructions per request (${N} requests after ${WARM})\n`,
  );
} finally {
  child.kill("SIGKILL");
  execFileSync("sh", ["-c", `rm -f ${out}*`]);
}
process.exit();
