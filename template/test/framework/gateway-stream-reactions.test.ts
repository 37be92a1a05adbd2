/**
 * A long server stream through the in-process gateway holds nothing per message until its deadline: no
 * promise collects one reaction per message (as a per-message Promise.race against the deadline did,
 * each race keeping its message reachable until the deadline passed). Observed with V8's promise hooks,
 * which name the promise each new one was chained from; nothing here depends on timing or the heap.
 */
import assert from "node:assert/strict";
import { test } from "node:test";
import { promiseHooks } from "node:v8";
import { defineService } from "../../src/framework/index.js";
import { startTestServer } from "../../src/framework/testing/harness.js";
import { FixtureService } from "../gen/fixture/v1/fixture_pb.js";

const MESSAGES = 1000;

const service = defineService(FixtureService, {
  handlers: {
    async *countdown(request) {
      for (let remaining = request.from; remaining > 0; remaining--) yield { remaining };
    },
  },
});

test("a 1,000-message stream with a deadline chains no reaction per message onto one promise (in-process gateway)", async (t) => {
  const server = await startTestServer([service], { GATEWAY_MODE: "in-process" });
  t.after(() => server.close());
  const children = new WeakMap<Promise<unknown>, number>();
  let most = 0;
  const stop = promiseHooks.onInit((_promise, parent) => {
    if (parent === undefined) return;
    const n = (children.get(parent) ?? 0) + 1;
    children.set(parent, n);
    if (n > most) most = n;
  });
  let body: string;
  try {
    const res = await fetch(`${server.httpUrl}/api/v1/countdown/${MESSAGES}`, { headers: { "grpc-timeout": "60S" } });
    body = await res.text();
  } finally {
    stop();
  }
  assert.equal(body.trim().split("\n").length, MESSAGES, "every message arrived");
  assert.ok(most < MESSAGES / 10, `one promise had ${most} promises chained onto it during a ${MESSAGES}-message stream`);
});
