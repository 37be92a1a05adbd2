import assert from "node:assert/strict";
import { randomBytes } from "node:crypto";
import { once } from "node:events";
import { get, type IncomingMessage } from "node:http";
import { test } from "node:test";
import { gunzipSync } from "node:zlib";
import { SignJWT } from "jose";
import { Profile } from "pprof-format";
import { Code } from "../../src/framework/index.js";
import { startTestServer } from "../../src/framework/testing/harness.js";
import { FixtureService } from "../gen/fixture/v1/fixture_pb.js";
import { fixtureService } from "./fixtures/fixture-service.js";

function strings(profile: Profile, ids: (number | bigint)[]): string[] {
  return ids.map((id) => profile.stringTable.strings[Number(id)] ?? "");
}

/** The names of the profile's sample types (`key` "type") or of their units ("unit"), from its string table. */
const sampleTypes = (profile: Profile, key: "type" | "unit" = "type") =>
  strings(
    profile,
    profile.sampleType.map((s) => s[key]),
  );

test("/debug/pprof/profile returns a gzipped pprof CPU profile with the service's own frames", async (t) => {
  const server = await startTestServer([fixtureService]);
  t.after(() => server.close());
  const client = server.client(FixtureService);
  const profiling = fetch(`${server.httpUrl}/debug/pprof/profile?seconds=1`);
  // Keep the process busy while it samples, so the profile has the chain's frames in it.
  const until = Date.now() + 900;
  while (Date.now() < until) await client.echo({ message: "load" });
  const res = await profiling;
  assert.equal(res.status, 200);
  const profile = Profile.decode(gunzipSync(Buffer.from(await res.arrayBuffer())));
  assert.deepEqual(sampleTypes(profile), ["samples", "cpu"]);
  assert.deepEqual(sampleTypes(profile, "unit"), ["count", "nanoseconds"]);
  assert.ok(profile.sample.length > 0, "samples");
  const files = strings(
    profile,
    profile.function.map((f) => f.filename),
  );
  assert.ok(
    files.some((f) => f.includes("/src/framework/")),
    "frames from the framework's own files",
  );
  for (const sample of profile.sample) for (const id of sample.locationId) assert.ok(profile.location.some((l) => l.id === id));
});

test("one CPU profile at a time (409), and seconds is bounded (400)", async (t) => {
  const server = await startTestServer([fixtureService]);
  t.after(() => server.close());
  // Two at once: whichever arrives second finds the profiler busy.
  const both = await Promise.all([1, 2].map(() => fetch(`${server.httpUrl}/debug/pprof/profile?seconds=1`)));
  assert.deepEqual(both.map((r) => r.status).sort(), [200, 409]);
  const busy = both.find((r) => r.status === 409)!;
  assert.equal(((await busy.json()) as { code: number }).code, 10);
  for (const bad of ["0", "301", "abc", "1.5"]) {
    const res = await fetch(`${server.httpUrl}/debug/pprof/profile?seconds=${bad}`);
    assert.equal(res.status, 400, bad);
  }
});

test("/debug/pprof/heap is pprof with in-use objects and bytes; ?debug=1 is a text summary", async (t) => {
  const server = await startTestServer([fixtureService]);
  t.after(() => server.close());
  const res = await fetch(`${server.httpUrl}/debug/pprof/heap`);
  assert.equal(res.status, 200);
  const profile = Profile.decode(gunzipSync(Buffer.from(await res.arrayBuffer())));
  assert.deepEqual(sampleTypes(profile), ["inuse_objects", "inuse_space"]);
  const text = await (await fetch(`${server.httpUrl}/debug/pprof/heap?debug=1`)).text();
  assert.match(text, /^heap profile \(sampled live allocations\): \d+ bytes/);
  assert.match(text, /process: rss \d+/);
});

test("a flood of /debug/pprof/heap requests is answered by one profile (each costs the event loop ~100 ms)", async (t) => {
  const server = await startTestServer([fixtureService]);
  t.after(() => server.close());
  const flood = await Promise.all(
    Array.from({ length: 50 }, async () => {
      const res = await fetch(`${server.httpUrl}/debug/pprof/heap`);
      assert.equal(res.status, 200);
      return Buffer.from(await res.arrayBuffer()).toString("base64");
    }),
  );
  // Every profile carries its creation time: 50 built one after another would differ.
  assert.ok(new Set(flood).size <= 2, `${new Set(flood).size} different profiles for 50 requests`);
  Profile.decode(gunzipSync(Buffer.from(flood[0]!, "base64")));
});

/** A GET whose response body is left unread (paused) until the caller reads it. */
function getPaused(url: string): Promise<IncomingMessage> {
  return new Promise((resolve, reject) => get(url, resolve).on("error", reject));
}

async function bodyOf(res: IncomingMessage): Promise<Buffer> {
  const chunks: Buffer[] = [];
  for await (const chunk of res) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks);
}

for (const admin of [false, true]) {
  test(`the HTTP port never serves the heap snapshot: 404 JSON and not in the index (${admin ? "with" : "without"} ADMIN_PORT)`, async (t) => {
    const server = await startTestServer([fixtureService], admin ? { ADMIN_PORT: "0" } : {});
    t.after(() => server.close());
    for (const path of [
      "/debug/pprof/heapsnapshot",
      "/debug/pprof/heapsnapshot?debug=1",
      "/debug/pprof/heapsnapshot/",
      "/DEBUG/pprof/heapsnapshot",
    ]) {
      const res = await fetch(`${server.httpUrl}${path}`);
      assert.equal(res.status, 404, path);
      assert.deepEqual(await res.json(), { code: Code.NOT_FOUND, message: "Not Found", details: [] }, path);
    }
    if (!admin) assert.doesNotMatch(await (await fetch(`${server.httpUrl}/debug/pprof/`)).text(), /heapsnapshot/);
  });
}

/** Asks until the snapshot slot is free: the server sees a response end on one of its next turns (each refusal is a cheap 409). */
async function snapshotWhenFree(url: string): Promise<Response> {
  for (let i = 0; ; i++) {
    const res = await fetch(url);
    if (res.status !== 409 || i === 200) return res;
    await res.arrayBuffer();
  }
}

test("the admin port streams a V8 heap snapshot, one at a time: 409 JSON while one is being sent", async (t) => {
  const server = await startTestServer([fixtureService], { ADMIN_PORT: "0" });
  t.after(() => server.close());
  const url = `${server.adminUrl}/debug/pprof/heapsnapshot`;
  // The first one's body stays unread: tens of MB, more than the sockets buffer, so its response cannot end.
  const first = await getPaused(url);
  assert.equal(first.statusCode, 200);
  const busy = await fetch(url);
  assert.equal(busy.status, 409);
  assert.deepEqual(await busy.json(), { code: Code.ABORTED, message: "a heap snapshot is already being taken", details: [] });
  const body = await bodyOf(first);
  assert.ok(body.length > 10_000_000, `a snapshot larger than socket buffers (${body.length} bytes)`);
  assert.ok((JSON.parse(body.toString("utf8")) as { snapshot: { node_count: number } }).snapshot.node_count > 1000);
  const again = await snapshotWhenFree(url);
  assert.equal(again.status, 200, "free again once the first response is gone");
  await again.arrayBuffer();
  assert.match(await (await fetch(`${server.adminUrl}/debug/pprof/`)).text(), /href="heapsnapshot"/);
});

test("a client that leaves mid-snapshot frees it for the next one and the process keeps serving", async (t) => {
  const server = await startTestServer([fixtureService], { ADMIN_PORT: "0" });
  t.after(() => server.close());
  const url = `${server.adminUrl}/debug/pprof/heapsnapshot`;
  const first = await getPaused(url);
  first.destroy();
  await once(first, "close");
  const next = await snapshotWhenFree(url);
  assert.equal(next.status, 200);
  await next.arrayBuffer();
  assert.equal((await fetch(`${server.httpUrl}/healthcheck`)).status, 200);
});

test("CPU and heap profiles hold neither JWT_SECRET nor an API key (the heap snapshot does: admin port only)", async (t) => {
  const secret = `jwt-secret-${randomBytes(24).toString("hex")}`;
  const apiKey = `api-key-${randomBytes(24).toString("hex")}`;
  const server = await startTestServer([fixtureService], {
    JWT_SECRET: secret,
    API_KEYS: apiKey,
    HTTP_HEADER_PREFIXES: "x-api-key",
    ADMIN_PORT: "0",
  });
  t.after(() => server.close());
  const client = server.client(FixtureService);
  const token = await new SignJWT({ sub: "alice" })
    .setProtectedHeader({ alg: "HS256" })
    .setExpirationTime("1h")
    .sign(new TextEncoder().encode(secret));
  const calls = async () => {
    await client.echo({ message: "with a token" }, { metadata: { authorization: `Bearer ${token}` } });
    await client.echo({ message: "with a key" }, { metadata: { "x-api-key": apiKey } });
    await fetch(`${server.httpUrl}/api/v1/echo/key`, { headers: { "x-api-key": apiKey } });
  };
  await (await fetch(`${server.adminUrl}/debug/pprof/heap`)).arrayBuffer(); // sampling starts with the first request
  const cpu = fetch(`${server.adminUrl}/debug/pprof/profile?seconds=1`);
  const until = Date.now() + 900;
  while (Date.now() < until) await calls();
  const profiles = {
    profile: Buffer.from(await (await cpu).arrayBuffer()),
    heap: Buffer.from(await (await fetch(`${server.adminUrl}/debug/pprof/heap`)).arrayBuffer()),
  };
  const needles = [secret, apiKey].flatMap((s) => [Buffer.from(s, "utf8"), Buffer.from(s, "utf16le")]);
  for (const [name, gz] of Object.entries(profiles)) {
    const raw = gunzipSync(gz);
    const profile = Profile.decode(raw);
    assert.ok(profile.stringTable.strings.length > 10, `${name} has a string table`);
    for (const needle of needles) assert.equal(raw.indexOf(needle), -1, `${name} bytes hold a secret`);
    for (const s of profile.stringTable.strings)
      assert.ok(!s.includes(secret) && !s.includes(apiKey), `${name} string table holds a secret`);
  }
  const text = await (await fetch(`${server.adminUrl}/debug/pprof/heap?debug=1`)).text();
  assert.ok(!text.includes(secret) && !text.includes(apiKey), "heap?debug=1 holds a secret");
  // The control: the same search finds them in a heap snapshot, which is why that one is admin-only.
  const snapshot = Buffer.from(await (await fetch(`${server.adminUrl}/debug/pprof/heapsnapshot`)).arrayBuffer());
  assert.notEqual(snapshot.indexOf(secret), -1, "the snapshot holds JWT_SECRET");
  assert.notEqual(snapshot.indexOf(apiKey), -1, "the snapshot holds the API key");
});

test("the index lists the profiles; DISABLE_DEBUG=true removes them all (404)", async (t) => {
  const on = await startTestServer([fixtureService]);
  t.after(() => on.close());
  const index = await fetch(`${on.httpUrl}/debug/pprof/`);
  assert.equal(index.status, 200);
  assert.match(await index.text(), /href="heap"/);
  const off = await startTestServer([fixtureService], { DISABLE_DEBUG: "true" });
  t.after(() => off.close());
  for (const path of ["/debug/pprof/", "/debug/pprof/heap", "/debug/pprof/profile?seconds=1"]) {
    assert.equal((await fetch(`${off.httpUrl}${path}`)).status, 404, path);
  }
});

test("with ADMIN_PORT the profiles move to the admin port and the HTTP port answers 404", async (t) => {
  const server = await startTestServer([fixtureService], { ADMIN_PORT: "0" });
  t.after(() => server.close());
  assert.equal((await fetch(`${server.adminUrl}/debug/pprof/`)).status, 200);
  assert.equal((await fetch(`${server.httpUrl}/debug/pprof/`)).status, 404);
  assert.equal((await fetch(`${server.httpUrl}/healthcheck`)).status, 200);
});
