import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { Metadata } from "@grpc/grpc-js";
import { FixtureService } from "../../../test/gen/fixture/v1/fixture_pb.js";
import { CallContext } from "./context.js";
import { LazyAbortController } from "./lazy-abort.js";
import { methodInfo } from "./method.js";

const contextOf = (controller?: AbortController | LazyAbortController) =>
  new CallContext({
    method: methodInfo(FixtureService.method.echo),
    transport: "grpc",
    metadata: new Metadata(),
    controller,
    deadline: Number.POSITIVE_INFINITY,
  });

describe("a call's abort signal", () => {
  test("a call aborted before anyone asked for its signal hands out one already aborted, with the reason", () => {
    const ctx = contextOf();
    const reason = new Error("client gone");
    assert.equal(ctx.aborted, false);
    ctx.abort(reason);
    assert.equal(ctx.aborted, true);
    assert.equal(ctx.signal.aborted, true);
    assert.equal(ctx.signal.reason, reason);
  });

  test("a signal taken before the abort fires its listeners once, and a second abort keeps the first reason", () => {
    const ctx = contextOf();
    const reasons: unknown[] = [];
    ctx.signal.addEventListener("abort", () => reasons.push(ctx.signal.reason));
    ctx.abort("first");
    ctx.abort("second");
    assert.deepEqual(reasons, ["first"]);
    assert.equal(ctx.signal, ctx.signal);
  });

  test("a transport's own controller is the call's: aborted from outside, the call is aborted", () => {
    const controller = new AbortController();
    const ctx = contextOf(controller);
    assert.equal(ctx.signal, controller.signal);
    controller.abort("http client gone");
    assert.equal(ctx.aborted, true);
    assert.equal(ctx.signal.reason, "http client gone");
  });

  test("the gateway's lazy controller, aborted when the HTTP client left, aborts the call without a signal ever made", () => {
    const controller = new LazyAbortController();
    const ctx = contextOf(controller);
    controller.abort("http client gone");
    assert.equal(ctx.aborted, true);
    assert.equal(ctx.signal.aborted, true);
    assert.equal(ctx.signal.reason, "http client gone");
    assert.equal(controller.signal, ctx.signal);
  });
});

describe("a call's response metadata", () => {
  test("the trace header kept aside is in the header metadata once they are read, and later sets go to them", () => {
    const ctx = contextOf();
    ctx.setResponseTraceHeader("x-trace-id", "t1");
    ctx.setResponseTraceHeader("x-trace-id", "t2");
    assert.deepEqual(ctx.responseHeaderEntries(), ["x-trace-id", "t2"]);
    assert.deepEqual(ctx.responseHeader.getMap(), { "x-trace-id": "t2" });
    assert.equal(ctx.responseHeaderEntries(), ctx.responseHeader);
    ctx.setResponseTraceHeader("x-trace-id", "t3");
    ctx.responseHeader.add("color", "blue");
    assert.deepEqual(ctx.responseHeader.getMap(), { "x-trace-id": "t3", color: "blue" });
  });

  test("a handler's own value for the trace header replaces the one kept aside, as a set on metadata would", () => {
    const ctx = contextOf();
    ctx.setResponseTraceHeader("x-trace-id", "t1");
    ctx.responseHeader.set("x-trace-id", "mine");
    assert.deepEqual(ctx.responseHeader.get("x-trace-id"), ["mine"]);
  });

  test("nothing set: no entries, and empty metadata made on first read, the same object every time", () => {
    const ctx = contextOf();
    assert.equal(ctx.responseHeaderEntries(), undefined);
    assert.equal(ctx.responseHeader, ctx.responseHeader);
    assert.equal(ctx.responseTrailer, ctx.responseTrailer);
    assert.deepEqual(ctx.responseHeader.getMap(), {});
  });
});
