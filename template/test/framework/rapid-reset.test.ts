/**
 * Rapid reset (CVE-2023-44487): connections that open streams and reset them at once, on the gRPC port and on
 * the HTTP port (h2c), are cut by the server (nghttp2's reset limit: GOAWAY), and under the Deployment's Node
 * options the memory the floods grow comes back near its baseline. Without a cap on V8's young generation it grew
 * to 128 MB in the first waves and stayed (RSS +120-150 MB for good, measured); capped (`--max-semi-space-size`
 * in deploy/k8s/deployment.yaml) it stays at 2 x 16 MB. The fixture service as a process, a raw client
 * (support/rapid-reset.ts) on loopback, 4 waves of 8 connections.
 */
import assert from "node:assert/strict";
import { afterEach, test } from "node:test";
import { deploymentNodeOptions } from "./deploy-files.js";
import { rssOf } from "./support/idle-streams.js";
import { newWaveCounts, resetFlood } from "./support/rapid-reset.js";
import { FIXTURE_MAIN, killServiceProcesses, startServiceProcess } from "./support/service-process.js";

afterEach(killServiceProcesses);

const CONNECTIONS = 8;
/** Well over nghttp2's burst of 1,000 resets a connection. */
const PAIRS = 5000;
/** RSS the four waves may add for good: measured +28-40 MB capped (once +82 in a full CI run), +120-150 MB not. */
const RSS_GROWTH_LIMIT_MB = 100;
const YOUNG_GENERATION_CAP_MB = 2 * 16;

async function youngGenerationMb(httpUrl: string): Promise<number> {
  const text = await (await fetch(`${httpUrl}/metrics`)).text();
  const match = /^nodejs_heap_space_size_total_bytes\{space="new"\} (\S+)$/m.exec(text);
  assert.ok(match, "the new space's size is in /metrics");
  return Number(match[1]) / 2 ** 20;
}

test(
  "rapid-reset floods on both ports are cut by GOAWAY and, under the Deployment's Node options, leave memory near its baseline",
  {
    timeout: 120_000,
  },
  async () => {
    const service = startServiceProcess(FIXTURE_MAIN, { NODE_OPTIONS: deploymentNodeOptions() });
    const { grpcPort, httpPort } = (await service.waitForLog("ready", (l) => l.msg === "ready")) as { grpcPort: number; httpPort: number };
    const httpUrl = `http://127.0.0.1:${httpPort}`;
    const pid = service.child.pid!;
    await youngGenerationMb(httpUrl); // the first scrape's own allocations, before the baseline
    const baseline = (await rssOf(pid)).rssMb;

    for (const [wave, http] of [false, true, false, true].entries()) {
      const counts = newWaveCounts();
      await Promise.all(Array.from({ length: CONNECTIONS }, () => resetFlood(http ? httpPort : grpcPort, PAIRS, counts, http, 20_000)));
      const what = `wave ${wave + 1} (${http ? "HTTP" : "gRPC"} port): ${JSON.stringify(counts)}`;
      assert.equal(counts.closedByServer, CONNECTIONS, `every connection cut by the server; ${what}`);
      assert.ok((counts.goaways["2"] ?? 0) >= CONNECTIONS, `each with a GOAWAY (INTERNAL_ERROR, nghttp2's reset limit); ${what}`);
    }

    const young = await youngGenerationMb(httpUrl);
    const grown = (await rssOf(pid)).rssMb - baseline;
    assert.ok(young <= YOUNG_GENERATION_CAP_MB, `V8's young generation ${young} MB`);
    assert.ok(grown <= RSS_GROWTH_LIMIT_MB, `RSS grew by ${Math.round(grown)} MB and stayed`);
    assert.equal((await fetch(`${httpUrl}/healthcheck`)).status, 200);
    assert.equal(service.child.exitCode, null, "the service is up");
  },
);
