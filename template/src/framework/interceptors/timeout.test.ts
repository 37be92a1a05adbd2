import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { create } from "@bufbuild/protobuf";
import { Metadata } from "@grpc/grpc-js";
import { holdEventLoopDuringTests } from "../../../test/framework/support/event-loop.js";
import { EchoRequestSchema, EchoResponseSchema, FixtureService } from "../../../test/gen/fixture/v1/fixture_pb.js";
import { CallContext } from "../call/context.js";
import { methodInfo } from "../call/method.js";
import { Code, GrpcError } from "../call/status.js";
import type { Call, CallResult } from "../call/types.js";
import { defaultTimeout } from "./timeout.js";

holdEventLoopDuringTests(); // the deadline timers are unref'd

const echo = methodInfo(FixtureService.method.echo);
const callOf = (deadline = Number.POSITIVE_INFINITY): Call => ({
  method: echo,
  ctx: new CallContext({ method: echo, transport: "grpc", metadata: new Metadata(), deadline }),
  request: create(EchoRequestSchema),
});
const reply: CallResult = { message: create(EchoResponseSchema, { message: "done" }) };
const isDeadline = (err: unknown) => err instanceof GrpcError && err.code === Code.DEADLINE_EXCEEDED;

describe("the default timeout", () => {
  test("calls that take the default expire in turn, each with its signal aborted; one that ends in time is unaffected", async () => {
    const handlers = new Map<Call, (r: CallResult) => void>();
    const invoke = defaultTimeout(0.02)((call) => new Promise((resolve) => handlers.set(call, resolve)), echo);
    const [a, b, c] = [callOf(), callOf(), callOf()];
    const pa = invoke(a);
    const pb = invoke(b);
    const pc = invoke(c);
    handlers.get(b)!(reply); // b ends before its deadline: it leaves the list, a and c still expire
    assert.equal(await pb, reply);
    await assert.rejects(pa, isDeadline);
    await assert.rejects(pc, isDeadline);
    assert.equal(a.ctx.aborted && c.ctx.aborted, true);
    assert.equal(b.ctx.aborted, false);
    assert.ok(Number.isFinite(b.ctx.deadline), "the default deadline is the call's");
  });

  test("after the list emptied, a new call is timed again", async () => {
    const invoke = defaultTimeout(0.02)(() => new Promise(() => {}), echo);
    await assert.rejects(invoke(callOf()), isDeadline);
    await assert.rejects(invoke(callOf()), isDeadline);
  });

  test("a call with its own deadline keeps it (its own timer), and one already past fails at once", async () => {
    const invoke = defaultTimeout(60)(() => new Promise(() => {}), echo);
    const own = callOf(Date.now() + 20);
    await assert.rejects(invoke(own), isDeadline);
    assert.equal(own.ctx.aborted, true);
    assert.throws(() => invoke(callOf(Date.now() - 1)), isDeadline);
  });

  test("a handler's failure passes through unchanged, and its deadline no longer fires on it", async () => {
    const boom = new GrpcError(Code.NOT_FOUND, "nope");
    const invoke = defaultTimeout(0.02)((call) => (call === failing ? Promise.reject(boom) : new Promise(() => {})), echo);
    const failing = callOf();
    await assert.rejects(invoke(failing), (err) => err === boom);
    await assert.rejects(invoke(callOf()), isDeadline); // a later call's deadline, so the first one's has passed too
    assert.equal(failing.ctx.aborted, false);
  });
});
