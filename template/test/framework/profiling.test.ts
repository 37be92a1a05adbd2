import assert from "node:assert/strict";
import { test } from "node:test";
import { gunzipSync } from "node:zlib";
import { Profile } from "pprof-format";
import { startTestServer } from "../../src/framework/testing/harness.js";
import { ExampleService } from "../../src/gen/example/v1/example_pb.js";
import { exampleService } from "../../src/service/example-service.js";

function strings(profile: Profile, ids: (number | bigint)[]): string[] {
  return ids.map((id) => profile.stringTable.strings[Number(id)] ?? "");
}

test("/debug/pprof/profile returns a gzipped pprof CPU profile with the service's own frames", async (t) => {
  const server = await startTestServer([exampleService]);
  t.after(() => server.close());
  const client = server.client(ExampleService);
  const profiling = fetch(`${server.httpUrl}/debug/pprof/profile?seconds=1`);
  // Keep the process busy while it samples, so the profile has the chain's frames in it.
  const until = Date.now() + 900;
  while (Date.now() < until) await client.echo({ message: "load" });
  const res = await profiling;
  assert.equal(res.status, 200);
  const profile = Profile.decode(gunzipSync(Buffer.from(await res.arrayBuffer())));
  assert.deepEqual(
    strings(
      profile,
      profile.sampleType.map((s) => s.type),
    ),
    ["samples", "cpu"],
  );
  assert.deepEqual(
    strings(
      profile,
      profile.sampleType.map((s) => s.unit),
    ),
    ["count", "nanoseconds"],
  );
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
  const server = await startTestServer([exampleService]);
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
  const server = await startTestServer([exampleService]);
  t.after(() => server.close());
  const res = await fetch(`${server.httpUrl}/debug/pprof/heap`);
  assert.equal(res.status, 200);
  const profile = Profile.decode(gunzipSync(Buffer.from(await res.arrayBuffer())));
  assert.deepEqual(
    strings(
      profile,
      profile.sampleType.map((s) => s.type),
    ),
    ["inuse_objects", "inuse_space"],
  );
  const text = await (await fetch(`${server.httpUrl}/debug/pprof/heap?debug=1`)).text();
  assert.match(text, /^heap profile \(sampled live allocations\): \d+ bytes/);
  assert.match(text, /process: rss \d+/);
});

test("/debug/pprof/heapsnapshot streams a V8 heap snapshot", async (t) => {
  const server = await startTestServer([exampleService]);
  t.after(() => server.close());
  const res = await fetch(`${server.httpUrl}/debug/pprof/heapsnapshot`);
  assert.equal(res.status, 200);
  const snapshot = JSON.parse(await res.text()) as { snapshot: { node_count: number } };
  assert.ok(snapshot.snapshot.node_count > 1000);
});

test("the index lists the profiles; DISABLE_DEBUG=true removes them all (404)", async (t) => {
  const on = await startTestServer([exampleService]);
  t.after(() => on.close());
  const index = await fetch(`${on.httpUrl}/debug/pprof/`);
  assert.equal(index.status, 200);
  assert.match(await index.text(), /href="heap"/);
  const off = await startTestServer([exampleService], { DISABLE_DEBUG: "true" });
  t.after(() => off.close());
  for (const path of ["/debug/pprof/", "/debug/pprof/heap", "/debug/pprof/profile?seconds=1"]) {
    assert.equal((await fetch(`${off.httpUrl}${path}`)).status, 404, path);
  }
});

test("with ADMIN_PORT the profiles move to the admin port and the HTTP port answers 404", async (t) => {
  const server = await startTestServer([exampleService], { ADMIN_PORT: "0" });
  t.after(() => server.close());
  assert.equal((await fetch(`${server.adminUrl}/debug/pprof/`)).status, 200);
  assert.equal((await fetch(`${server.httpUrl}/debug/pprof/`)).status, 404);
  assert.equal((await fetch(`${server.httpUrl}/healthcheck`)).status, 200);
});
