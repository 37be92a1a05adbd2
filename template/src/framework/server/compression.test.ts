/**
 * Response compression: the server's one onSend hook per route (folded from the plugin's hooks) gives
 * the same status, headers and bytes as the plugin set up as before (a root onSend hook opting small and
 * non-text bodies out, then the plugin's own route hooks), for every body size, type and Accept-Encoding.
 */
import assert from "node:assert/strict";
import { request } from "node:http";
import { Readable } from "node:stream";
import { after, before, describe, test } from "node:test";
import { gunzipSync, gzipSync } from "node:zlib";
import compress from "@fastify/compress";
import Fastify, { type FastifyInstance } from "fastify";
import { loadConfig } from "../config/load.js";
import { createHttpServer } from "./http-server.js";

/** The set-up before the fold, kept here as the reference: the same plugin options and the old root hook. */
async function referenceServer(): Promise<FastifyInstance> {
  const COMPRESSIBLE = /^text\/(?!event-stream)|[+/]json(?:;|$)|^application\/(?:javascript|xml)|[+/]xml(?:;|$)/;
  const below = (payload: unknown) =>
    typeof payload === "string"
      ? payload.length * 3 < 1024 || Buffer.byteLength(payload) < 1024
      : payload instanceof Uint8Array && payload.byteLength < 1024;
  const app = Fastify({ logger: false });
  app.addHook("onSend", (req, reply, payload, done) => {
    if (below(payload)) req.headers["x-no-compression"] = "1";
    else {
      const type = reply.getHeader("content-type");
      if (typeof type !== "string" || !COMPRESSIBLE.test(type)) req.headers["x-no-compression"] = "1";
    }
    done(null, payload);
  });
  await app.register(compress, {
    global: true,
    threshold: 1024,
    encodings: ["br", "gzip"],
    customTypes: COMPRESSIBLE,
    globalDecompression: false,
  });
  return app;
}

const big = JSON.stringify({ items: Array.from({ length: 60 }, (_, i) => ({ id: i, name: `item ${i}` })) });
const justUnder = JSON.stringify({ pad: "x".repeat(1024 - 11) }); // 1023 bytes
const justOver = JSON.stringify({ pad: "x".repeat(1024 - 10) }); // 1024 bytes
const threeByte = JSON.stringify({ s: "€".repeat(400) }); // 400 characters, 1,208 bytes

/** Routes added to both servers alike: each answers one way the gateway or a user's route may. */
function addRoutes(app: FastifyInstance, replyCompress?: boolean): void {
  const opts = replyCompress === undefined ? {} : { replyCompress };
  const json = (body: string) => ({
    ...opts,
    handler: async (_req: unknown, reply: import("fastify").FastifyReply) => reply.type("application/json; charset=utf-8").send(body),
  });
  app.post("/small", json('{"message":"hi"}'));
  app.post("/under", json(justUnder));
  app.post("/over", json(justOver));
  app.post("/big", json(big));
  app.post("/three-byte", json(threeByte));
  app.post("/error", { ...opts, handler: async (_req, reply) => reply.code(400).type("application/json").send(big) });
  app.post("/octet", { ...opts, handler: async (_req, reply) => reply.type("application/octet-stream").send(Buffer.from(big)) });
  app.post("/text-buffer", { ...opts, handler: async (_req, reply) => reply.type("text/plain").send(Buffer.from(big)) });
  app.post("/no-type-buffer", { ...opts, handler: async (_req, reply) => reply.send(Buffer.from(big)) });
  app.post("/gzipped", { ...opts, handler: async (_req, reply) => reply.type("application/json").send(gzipSync(big)) });
  app.post("/encoded", {
    ...opts,
    handler: async (_req, reply) => reply.type("application/json").header("content-encoding", "gzip").send(gzipSync(big)),
  });
  app.post("/vary-origin", { ...opts, handler: async (_req, reply) => reply.type("application/json").header("vary", "Origin").send(big) });
  app.post("/vary-both", {
    ...opts,
    handler: async (_req, reply) => reply.type("application/json").header("vary", ["Origin", "accept-encoding"]).send(big),
  });
  app.post("/partial", { ...opts, handler: async (_req, reply) => reply.code(206).type("text/plain").send(big) });
  app.post("/range", {
    ...opts,
    handler: async (_req, reply) => reply.type("text/plain").header("content-range", "bytes 0-9/99").send(big),
  });
  app.post("/sse", { ...opts, handler: async (_req, reply) => reply.type("text/event-stream").send(big) });
  app.post("/stream", { ...opts, handler: async (_req, reply) => reply.type("text/plain").send(Readable.from([big, big])) });
  app.post("/object", { ...opts, handler: async () => JSON.parse(big) as unknown });
  app.post("/empty", { ...opts, handler: async (_req, reply) => reply.code(204).send() });
}

interface Reply {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  body: Buffer;
}

function send(port: number, path: string, headers: Record<string, string>): Promise<Reply> {
  return new Promise((resolve, reject) => {
    const req = request({ host: "127.0.0.1", port, path, method: "POST", headers }, (res) => {
      const chunks: Buffer[] = [];
      res.on("data", (c: Buffer) => chunks.push(c));
      res.on("end", () => {
        const { date: _date, ...rest } = res.headers;
        resolve({ status: res.statusCode ?? 0, headers: rest, body: Buffer.concat(chunks) });
      });
      res.on("error", reject);
    });
    req.on("error", reject);
    req.end();
  });
}

const PATHS = [
  "/small",
  "/under",
  "/over",
  "/big",
  "/three-byte",
  "/error",
  "/octet",
  "/text-buffer",
  "/no-type-buffer",
  "/gzipped",
  "/encoded",
  "/vary-origin",
  "/vary-both",
  "/partial",
  "/range",
  "/sse",
  "/stream",
  "/object",
  "/empty",
];
const ACCEPT: (Record<string, string> | undefined)[] = [
  undefined,
  { "accept-encoding": "gzip" },
  { "accept-encoding": "br" },
  { "accept-encoding": "deflate" },
  { "accept-encoding": "identity" },
  { "accept-encoding": "gzip, deflate, br" },
  { "accept-encoding": "br;q=0.5, gzip;q=0.9" },
  { "accept-encoding": "br;q=0, gzip;q=0" },
  { "accept-encoding": "*" },
  { "accept-encoding": "x-gzip" },
  { "accept-encoding": "GZIP" },
  { "accept-encoding": "gzip", "x-no-compression": "1" },
];

for (const replyCompress of [undefined, false]) {
  describe(`compression: the folded hook answers as the plugin's hooks did (replyCompress ${replyCompress})`, () => {
    let ours: FastifyInstance;
    let reference: FastifyInstance;
    const ports: number[] = [];
    before(async () => {
      ours = await createHttpServer(loadConfig({}));
      reference = await referenceServer();
      for (const app of [ours, reference]) {
        addRoutes(app, replyCompress);
        await app.listen({ host: "127.0.0.1", port: 0 });
        ports.push((app.server.address() as { port: number }).port);
      }
    });
    after(async () => {
      await ours.close();
      await reference.close();
    });

    test("same status, headers and bytes for every body and Accept-Encoding", async () => {
      let compressed = 0;
      for (const path of PATHS) {
        for (const accept of ACCEPT) {
          const headers = { ...accept };
          const [a, b] = [await send(ports[0]!, path, headers), await send(ports[1]!, path, headers)];
          const what = `${path} ${JSON.stringify(accept)}`;
          assert.equal(a.status, b.status, what);
          assert.deepEqual(a.headers, b.headers, what);
          assert.deepEqual(a.body, b.body, what);
          if (a.headers["content-encoding"] !== undefined && path !== "/encoded") compressed++;
        }
      }
      assert.ok(compressed > 20, `some answers were compressed (${compressed})`);
    });

    test("a body of 1 KiB or more is compressed, a smaller one is not", async () => {
      const over = await send(ports[0]!, "/over", { "accept-encoding": "gzip" });
      assert.equal(over.headers["content-encoding"], "gzip");
      assert.equal(over.headers.vary, "accept-encoding");
      assert.equal(gunzipSync(over.body).toString(), justOver);
      const under = await send(ports[0]!, "/under", { "accept-encoding": "gzip" });
      assert.equal(under.headers["content-encoding"], undefined);
      assert.equal(under.body.toString(), justUnder);
    });
  });
}

test("a route keeps reply.compress() unless it opts out of it, and compresses its replies either way", async () => {
  const app = await createHttpServer(loadConfig({}));
  app.post("/with", async (_req, reply) => reply.type("application/json").compress(big));
  app.post("/without", { replyCompress: false }, async (_req, reply) => {
    assert.equal(reply.compress, null);
    return reply.type("application/json").send(big);
  });
  await app.listen({ host: "127.0.0.1", port: 0 });
  const { port } = app.server.address() as { port: number };
  try {
    for (const path of ["/with", "/without"]) {
      const r = await send(port, path, { "accept-encoding": "gzip" });
      assert.equal(r.status, 200, path);
      assert.equal(r.headers["content-encoding"], "gzip", path);
      assert.equal(gunzipSync(r.body).toString(), big, path);
    }
  } finally {
    await app.close();
  }
});

test("DISABLE_HTTP_COMPRESSION=true sends every body as it is", async () => {
  const app = await createHttpServer(loadConfig({ DISABLE_HTTP_COMPRESSION: "true" }));
  addRoutes(app);
  await app.listen({ host: "127.0.0.1", port: 0 });
  const { port } = app.server.address() as { port: number };
  try {
    const r = await send(port, "/big", { "accept-encoding": "gzip, br" });
    assert.equal(r.headers["content-encoding"], undefined);
    assert.equal(r.body.toString(), big);
  } finally {
    await app.close();
  }
});
