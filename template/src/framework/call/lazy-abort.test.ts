import assert from "node:assert/strict";
import { EventEmitter } from "node:events";
import { describe, test } from "node:test";
import { type CancelSource, LazyAbortController } from "./lazy-abort.js";

/** A transport's cancellation as the gRPC adapter offers it: a flag, and an event. */
class FakeCall extends EventEmitter implements CancelSource {
  readonly reason = new Error("call cancelled");
  cancelled = false;
  cancel(): void {
    this.cancelled = true;
    this.emit("cancelled");
  }
  onCancel(listener: () => void): void {
    this.on("cancelled", listener);
  }
}

describe("LazyAbortController with a cancel source", () => {
  test("nobody asked for the signal: no listener on the source, and a cancel is still seen, with the source's reason", () => {
    const call = new FakeCall();
    const controller = new LazyAbortController(call);
    assert.equal(controller.aborted, false);
    call.cancel();
    assert.equal(call.listenerCount("cancelled"), 0);
    assert.equal(controller.aborted, true);
    assert.equal(controller.signal.aborted, true);
    assert.equal(controller.signal.reason, call.reason);
  });

  test("once the signal exists it listens to the source, and a cancel aborts it once", () => {
    const call = new FakeCall();
    const controller = new LazyAbortController(call);
    let aborts = 0;
    controller.signal.addEventListener("abort", () => aborts++);
    assert.equal(call.listenerCount("cancelled"), 1);
    call.cancel();
    call.emit("cancelled");
    assert.equal(aborts, 1);
    assert.equal(controller.signal.reason, call.reason);
  });

  test("an abort of its own before the source cancels keeps its own reason", () => {
    const call = new FakeCall();
    const controller = new LazyAbortController(call);
    controller.abort("deadline");
    call.cancel();
    assert.equal(controller.signal.reason, "deadline");
  });
});
