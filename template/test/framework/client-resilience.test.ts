/**
 * createClient's policy against a real downstream server: the retry budget (grpc-js retry throttling), the
 * breaker (adaptive throttle), hedging, deadlines over retries, and the log lines of outbound calls.
 */
import assert from "node:assert/strict";
import { once } from "node:events";
import { after, test } from "node:test";
import { setTimeout as sleep } from "node:timers/promises";
import { type ClientOptions, Code, createClient, defineService, GrpcError } from "../../src/framework/index.js";
import { startTestServer } from "../../src/framework/testing/harness.js";
import { statusOf } from "../../src/framework/testing/status.js";
import { FixtureService } from "../gen/fixture/v1/fixture_pb.js";
import { fixtureService } from "./fixtures/fixture-service.js";

type After = { after(fn: () => unknown): void };

/**
 * grpc-js keeps one retry budget per target for the whole process, and the OS hands a closed server's port to the
 * next one: downstreams stay open until the file ends, so no test inherits another's drained budget.
 */
const open: { close(): Promise<void> }[] = [];
after(() => Promise.all(open.map((s) => s.close())));

/** A downstream whose Fail answers as `state.answer(n)` says for its n-th call (1-based), counting every attempt it gets. */
async function startDownstream(answer: (n: number) => Code = () => Code.UNAVAILABLE) {
  const state = { calls: 0, answer, echoes: [] as { message: string; cancelled: Promise<unknown> }[] };
  const server = await startTestServer([
    defineService(FixtureService, {
      handlers: {
        ...fixtureService.handlers,
        fail() {
          const code = state.answer(++state.calls);
          if (code !== Code.OK) throw new GrpcError(code, `answer ${state.calls}`);
          return {};
        },
        async echo(request, ctx) {
          state.echoes.push({ message: request.message, cancelled: once(ctx.signal, "abort") });
          // The first attempt of a call is slow; any later one answers at once.
          if (state.echoes.length === 1) await sleep(10_000, undefined, { signal: ctx.signal }).catch(() => {});
          return { message: `${request.message} #${state.echoes.length}` };
        },
      },
    }),
  ]);
  open.push(server);
  return { server, state };
}

/** Makes `calls` calls of Fail one after another; how many attempts reached the downstream. */
async function attemptsFor(t: After, calls: number, failEvery: number, options: ClientOptions<typeof FixtureService>) {
  // Fails the n-th attempt when n is a multiple of failEvery (1: every attempt).
  const { server, state } = await startDownstream((n) => (n % failEvery === 0 ? Code.UNAVAILABLE : Code.OK));
  const client = createClient(FixtureService, server.grpcAddress, options);
  t.after(() => client.close());
  for (let i = 0; i < calls; i++) await client.fail({}).catch(() => {});
  return state.calls;
}

/** The value of `family`'s series for one fixture method in a Prometheus exposition. */
function sample(text: string, family: string, method: string, extra = ""): number | undefined {
  const labels = `grpc_type="unary",grpc_service="fixture.v1.FixtureService",grpc_method="${method}"${extra}`;
  const line = text.split("\n").find((l) => l.startsWith(`${family}{${labels}} `));
  return line === undefined ? undefined : Number(line.slice(line.lastIndexOf(" ") + 1));
}

const succeeds = (call: Promise<unknown>) =>
  call.then(
    () => true,
    () => false,
  );

// Back-off of 1 ms so the test does not wait; the budget is what it is about.
const fastRetry = { retry: { maxAttempts: 3, initialBackoffMs: 1, maxBackoffMs: 1 }, breaker: false as const };

test("the retry budget: under a dependency failing every call, attempts stay ≤ 1.2× calls (3× without it)", async (t) => {
  const calls = 100;
  const budgeted = await attemptsFor(t, calls, 1, fastRetry);
  const unbudgeted = await attemptsFor(t, calls, 1, { ...fastRetry, retryBudget: false });
  console.log(`# every attempt failing, ${calls} calls: ${budgeted} attempts with the default budget, ${unbudgeted} without`);
  assert.ok(budgeted <= 1.2 * calls, `${budgeted} attempts for ${calls} calls`);
  assert.equal(unbudgeted, 3 * calls, "without a budget every call makes its 3 attempts");

  // A dependency failing a share of attempts: retried while the share is small, never above 1.1× calls.
  const shares: string[] = [];
  for (const failEvery of [20, 5, 2]) {
    const attempts = await attemptsFor(t, calls, failEvery, fastRetry);
    shares.push(`1/${failEvery} failing: ${(attempts / calls).toFixed(2)}x`);
    assert.ok(attempts <= 1.2 * calls, `${attempts} attempts for ${calls} calls at 1/${failEvery} failing`);
  }
  console.log(`# attempts per call with the budget: ${shares.join(", ")}`);
});

test("the breaker: calls to a failing dependency are rejected locally (UNAVAILABLE, named), counted, logged; it closes once the dependency answers", async (t) => {
  const { server: downstream, state } = await startDownstream();
  const service = await startTestServer([fixtureService]);
  t.after(() => service.close());
  const client = service.app.createClient(FixtureService, downstream.grpcAddress, { retry: false });
  t.after(() => client.close());

  const calls = 300;
  let rejected = 0;
  for (let i = 0; i < calls; i++) {
    const status = await statusOf(client.fail({}));
    assert.equal(status.code, Code.UNAVAILABLE);
    if (state.calls <= i && status.details.includes("not called")) {
      rejected++;
      assert.match(status.details, /^fixture\.v1\.FixtureService\/Fail not called: 127\.0\.0\.1:\d+ has been failing/);
    }
  }
  console.log(`# breaker: ${calls} calls to a dead dependency, ${state.calls} reached it, ${rejected} rejected locally`);
  assert.ok(state.calls <= calls / 2, `${state.calls} of ${calls} calls reached the failing dependency`);
  assert.equal(state.calls + rejected, calls);

  const metrics = await (await fetch(`${service.httpUrl}/metrics`)).text();
  assert.equal(sample(metrics, "grpc_client_rejected_total", "Fail"), rejected);
  assert.equal(sample(metrics, "grpc_client_attempts_total", "Fail"), state.calls);
  assert.equal(sample(metrics, "grpc_client_started_total", "Fail"), calls);
  assert.equal(sample(metrics, "grpc_client_handled_total", "Fail", ',grpc_code="Unavailable"'), calls);
  const opened = service.logs.find((l) => l.msg === "outbound calls rejected locally: dependency failing");
  assert.equal(opened?.dependency, downstream.grpcAddress);
  assert.equal(opened?.method, "fixture.v1.FixtureService/Fail");

  // The dependency recovers: the calls that still reach it succeed, and soon every call does.
  state.answer = () => Code.OK;
  let i = 0;
  let inARow = 0;
  for (; inARow < 50 && i < 2000; i++) inARow = (await succeeds(client.fail({}))) ? inARow + 1 : 0;
  console.log(`# breaker: the dependency recovered; ${i - inARow} calls later every call succeeds`);
  assert.equal(inARow, 50, "50 calls in a row succeed again");
  assert.ok(
    service.logs.some(
      (l) => l.msg === "outbound calls let through again: dependency answering" && l.method === "fixture.v1.FixtureService/Fail",
    ),
  );
});

test("client errors (NotFound, InvalidArgument, …) never open the breaker: the dependency answered", async (t) => {
  const codes = [Code.NOT_FOUND, Code.INVALID_ARGUMENT, Code.ALREADY_EXISTS, Code.PERMISSION_DENIED, Code.FAILED_PRECONDITION];
  const { server, state } = await startDownstream((n) => codes[n % codes.length]!);
  const client = createClient(FixtureService, server.grpcAddress);
  t.after(() => client.close());
  for (let i = 0; i < 200; i++) assert.equal((await statusOf(client.fail({}))).code, codes[(i + 1) % codes.length]);
  assert.equal(state.calls, 200, "every call reached the dependency, once");
});

test("retries keep the caller's deadline: a retry that cannot finish in time ends DEADLINE_EXCEEDED, not after its back-off", async (t) => {
  const { server, state } = await startDownstream();
  const client = createClient(FixtureService, server.grpcAddress, {
    retry: { maxAttempts: 5, initialBackoffMs: 60_000, maxBackoffMs: 60_000 },
  });
  t.after(() => client.close());
  const status = await statusOf(client.fail({}, { deadline: Date.now() + 200 }));
  assert.equal(status.code, Code.DEADLINE_EXCEEDED);
  assert.equal(state.calls, 1, "the one attempt before the back-off");
});

test(
  "hedging: a NO_SIDE_EFFECTS method is sent again after delayMs, the first answer wins, the slow attempt is cancelled",
  {
    timeout: 8000,
  },
  async (t) => {
    const { server: downstream, state } = await startDownstream();
    const service = await startTestServer([fixtureService]);
    t.after(() => service.close());
    const client = service.app.createClient(FixtureService, downstream.grpcAddress, {
      methods: { echo: { hedging: { maxAttempts: 2, delayMs: 50 } } },
    });
    t.after(() => client.close());
    assert.equal((await client.echo({ message: "hedged" })).message, "hedged #2", "the second attempt's answer");
    assert.equal(state.echoes.length, 2);
    await state.echoes[0]?.cancelled; // the slow first attempt is cancelled (else the test times out)
    const metrics = await (await fetch(`${service.httpUrl}/metrics`)).text();
    assert.equal(sample(metrics, "grpc_client_hedges_total", "Echo"), 1);
    assert.equal(sample(metrics, "grpc_client_attempts_total", "Echo"), 2);
    assert.throws(
      () => createClient(FixtureService, downstream.grpcAddress, { methods: { fail: { hedging: { maxAttempts: 2, delayMs: 50 } } } }),
      /Fail may not be hedged: its proto must say option idempotency_level = IDEMPOTENT or NO_SIDE_EFFECTS/,
    );
  },
);

test("a call in debug mode logs each outbound call: dependency, method, code and attempts", async (t) => {
  const { server: downstream, state } = await startDownstream((n) => (n <= 2 ? Code.UNAVAILABLE : Code.OK));
  const next = createClient(FixtureService, downstream.grpcAddress, { retry: { initialBackoffMs: 1, maxBackoffMs: 1 } });
  t.after(() => next.close());
  const upstream = await startTestServer([
    defineService(FixtureService, {
      handlers: {
        ...fixtureService.handlers,
        async echo(request) {
          await next.fail({});
          return { message: request.message };
        },
      },
    }),
  ]);
  t.after(() => upstream.close());
  await upstream.client(FixtureService).echo({ message: "look", debug: true });
  assert.equal(state.calls, 3);
  const line = upstream.logs.find((l) => l.msg === "outbound call");
  assert.equal(line?.dependency, downstream.grpcAddress);
  assert.equal(line?.method, "fixture.v1.FixtureService/Fail");
  assert.equal(line?.code, "OK");
  assert.equal(line?.attempts, 3);
  assert.equal(line?.level, "debug", "at debug, on this call only");
});
