import type { FastifyInstance, FastifyReply } from "fastify";
import { Code, GrpcError } from "../call/status.js";
import type { Config } from "../config/schema.js";
import { sendHttpError } from "../errors/http.js";
import { cpuProfile } from "./cpu.js";
import { heapProfile, heapSummary } from "./heap.js";
import { heapSnapshot } from "./snapshot.js";

const DEFAULT_SECONDS = 30;
const MAX_SECONDS = 300;

/** The index page; the heap snapshot is listed where it is served (the admin port). */
const index = (snapshot: boolean) => `<!doctype html>
<title>/debug/pprof/</title>
<h1>/debug/pprof/</h1>
<ul>
<li><a href="profile?seconds=${DEFAULT_SECONDS}">profile</a>: CPU profile, pprof format (gzip); <code>?seconds=N</code>, 1–${MAX_SECONDS}, one at a time</li>
<li><a href="heap">heap</a>: sampled live allocations, pprof format (gzip); <a href="heap?debug=1">heap?debug=1</a> as text</li>
${snapshot ? '<li><a href="heapsnapshot">heapsnapshot</a>: a V8 heap snapshot for Chrome DevTools (pauses the process while taken; one at a time)</li>\n' : ""}</ul>
<p>Read them with <code>go tool pprof -http=: profile.pb.gz</code> or <a href="https://www.speedscope.app">speedscope</a>.</p>
`;

function pprofReply(reply: FastifyReply, name: string, body: Buffer): FastifyReply {
  return reply.type("application/octet-stream").header("content-disposition", `attachment; filename="${name}.pb.gz"`).send(body);
}

/**
 * `/debug/pprof/`: CPU and heap profiles in pprof format, unless DISABLE_DEBUG (then false: nothing served).
 * Neither holds string contents (frames and sizes only). The V8 heap snapshot does (every string in memory,
 * secrets included), so it is served on the admin port only: on the HTTP port it is a 404 whatever the settings.
 */
export function registerProfilingRoutes(
  app: FastifyInstance,
  { config, adminPort }: { config: Pick<Config, "DISABLE_DEBUG">; adminPort: boolean },
): boolean {
  if (config.DISABLE_DEBUG) return false;
  let cpuBusy = false;
  let snapshotBusy = false;
  const indexPage = index(adminPort);

  app.get("/debug/pprof/", (_req, reply) => reply.type("text/html; charset=utf-8").send(indexPage));
  app.get("/debug/pprof", (_req, reply) => reply.redirect("/debug/pprof/"));

  app.get<{ Querystring: { seconds?: string } }>("/debug/pprof/profile", async (req, reply) => {
    const raw = req.query.seconds ?? String(DEFAULT_SECONDS);
    const seconds = /^\d+$/.test(raw) ? Number(raw) : Number.NaN;
    if (!(seconds >= 1 && seconds <= MAX_SECONDS)) {
      return sendHttpError(reply, new GrpcError(Code.INVALID_ARGUMENT, `seconds must be an integer from 1 to ${MAX_SECONDS}`));
    }
    if (cpuBusy) return sendHttpError(reply, new GrpcError(Code.ABORTED, "a CPU profile is already being taken"));
    cpuBusy = true;
    const left = new AbortController();
    req.raw.once("close", () => left.abort());
    try {
      return pprofReply(reply, "profile", await cpuProfile(seconds, left.signal));
    } finally {
      cpuBusy = false;
    }
  });

  app.get<{ Querystring: { debug?: string } }>("/debug/pprof/heap", async (req, reply) => {
    if (req.query.debug === "1") return reply.type("text/plain; charset=utf-8").send(await heapSummary());
    return pprofReply(reply, "heap", await heapProfile());
  });

  if (!adminPort) return true;
  // One at a time, from the request until its response is gone: taking one blocks the process for
  // a while, and parallel requests would stack those pauses (and the memory of their buffered bodies).
  app.get("/debug/pprof/heapsnapshot", (_req, reply) => {
    if (snapshotBusy) return sendHttpError(reply, new GrpcError(Code.ABORTED, "a heap snapshot is already being taken"));
    snapshotBusy = true;
    reply.raw.once("close", () => {
      snapshotBusy = false;
    });
    return reply
      .type("application/octet-stream")
      .header("content-disposition", `attachment; filename="${process.pid}.heapsnapshot"`)
      .send(heapSnapshot());
  });
  return true;
}
