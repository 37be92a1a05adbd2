import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { create } from "@bufbuild/protobuf";
import { Metadata } from "@grpc/grpc-js";
import { EchoRequestSchema, FixtureService } from "../../../test/gen/fixture/v1/fixture_pb.js";
import { Chain, type NamedInterceptor, type Stage, staged } from "./chain.js";
import { CallContext } from "./context.js";
import { methodInfo } from "./method.js";
import type { Call, CallResult, Interceptor, Next } from "./types.js";

const echo = methodInfo(FixtureService.method.echo);
const countdown = methodInfo(FixtureService.method.countdown);

function callOf(info = echo): Call {
  const ctx = new CallContext({ method: info, transport: "grpc", metadata: new Metadata(), deadline: Number.POSITIVE_INFINITY });
  return { method: info, ctx, request: create(EchoRequestSchema, { message: "hi" }) };
}

/** Where a stage of the scenario misbehaves: its enter or its answered hook throws, or its failed hook maps or throws. */
interface Faults {
  enterThrows?: boolean;
  answeredThrows?: boolean;
  failedMaps?: boolean;
  failedThrows?: boolean;
}

/** A stage that records each hook it runs in `events`, misbehaving as `faults` says. */
function recordingStage(name: string, events: string[], faults: Faults = {}): Stage {
  return {
    timed: name.endsWith("timed"),
    enter: (call) => {
      events.push(`${name} enter ${call.method.name}`);
      if (faults.enterThrows) throw new Error(`${name} refused`);
    },
    answered: (_call, result) => {
      events.push(`${name} answered ${"message" in result}`);
      if (faults.answeredThrows) throw new Error(`${name} answer broke`);
    },
    failed: (_call, error) => {
      events.push(`${name} failed ${(error as Error).message}`);
      if (faults.failedThrows) throw new Error(`${name} failure broke`);
      return faults.failedMaps ? new Error(`${name} mapped ${(error as Error).message}`) : error;
    },
  };
}

/** The stage as a plain nested interceptor, written out with `.then`: what a fused run must be equivalent to. */
function nested(stage: Stage): Interceptor {
  return (next) => (call) => {
    const start = stage.timed ? performance.now() : 0;
    stage.enter?.(call);
    return next(call).then(
      (result) => {
        stage.answered?.(call, result, start);
        return result;
      },
      (error: unknown) => {
        throw stage.failed ? stage.failed(call, error, start) : error;
      },
    );
  };
}

/** A plain interceptor between the stages (it splits them into two fused runs). */
function plain(events: string[]): Interceptor {
  return (next) => async (call) => {
    events.push("plain in");
    try {
      return await next(call);
    } finally {
      events.push("plain out");
    }
  };
}

type Handler = "answers" | "rejects" | "throws";

function handlerOf(kind: Handler, events: string[]): Next {
  return (call) => {
    events.push(`handler ${kind}`);
    if (kind === "throws") throw new Error("handler threw");
    if (kind === "rejects") return Promise.reject(new Error("handler rejected"));
    return Promise.resolve({ message: call.request });
  };
}

/** Runs one call through a chain of the stages, either fused (staged interceptors) or written out as nested ones. */
async function outcome(
  fused: boolean,
  handler: Handler,
  faults: Record<string, Faults>,
  withPlain: boolean,
): Promise<{ events: string[]; result: string }> {
  const events: string[] = [];
  const names = ["a", "b timed", "c", "d", "e"];
  const entries: NamedInterceptor[] = names.map((name) => {
    const stage = recordingStage(name, events, faults[name]);
    return { name, interceptor: fused ? staged(() => stage, nested(stage)) : nested(stage) };
  });
  if (withPlain) entries.splice(2, 0, { name: "plain", interceptor: plain(events) });
  const invoke = new Chain(entries).compose(echo, handlerOf(handler, events));
  const result = await invoke(callOf()).then(
    (r: CallResult) => `answered ${"message" in r}`,
    (err: unknown) => `failed ${(err as Error).message}`,
  );
  return { events, result };
}

describe("stages (interceptors the chain runs together in one frame)", () => {
  const scenarios: [string, Handler, Record<string, Faults>][] = [
    ["every stage passes and the handler answers", "answers", {}],
    ["the handler rejects", "rejects", {}],
    ["the handler throws synchronously", "throws", {}],
    ["an inner stage's enter throws", "answers", { d: { enterThrows: true } }],
    ["the outermost stage's enter throws", "answers", { a: { enterThrows: true } }],
    ["an answered hook throws", "answers", { c: { answeredThrows: true } }],
    [
      "failed hooks map the error, one of them throws",
      "rejects",
      { e: { failedMaps: true }, c: { failedThrows: true }, a: { failedMaps: true } },
    ],
    ["an enter throws and an outer failed hook maps it", "answers", { c: { enterThrows: true }, "b timed": { failedMaps: true } }],
  ];
  for (const [name, handler, faults] of scenarios) {
    for (const withPlain of [false, true]) {
      test(`${name}${withPlain ? " (a plain interceptor among them)" : ""}: the same hooks in the same order and the same outcome as nested interceptors`, async () => {
        const expected = await outcome(false, handler, faults, withPlain);
        const actual = await outcome(true, handler, faults, withPlain);
        assert.deepEqual(actual, expected);
        assert.ok(expected.events.length > 0, "the scenario ran hooks");
      });
    }
  }

  test("a staged interceptor composed by hand runs its stage around next, and its own function where it has no stage", async () => {
    const events: string[] = [];
    const stage = recordingStage("s", events);
    const interceptor = staged(
      (method) => (method.kind === "unary" ? stage : undefined),
      (next) => (call) => {
        events.push("fallback");
        return next(call);
      },
    );
    await interceptor(handlerOf("answers", events), echo)(callOf());
    assert.deepEqual(events, ["s enter Echo", "handler answers", "s answered true"]);
    events.length = 0;
    await interceptor(handlerOf("answers", events), countdown)(callOf(countdown));
    assert.deepEqual(events, ["fallback", "handler answers"]);
  });

  test("the exits get the time the timed stage was entered", async () => {
    let seen = -1;
    const before = performance.now();
    const stage: Stage = {
      timed: true,
      answered: (_call, _result, start) => {
        seen = start;
      },
    };
    await new Chain([{ name: "t", interceptor: staged(() => stage, nested(stage)) }]).compose(echo, handlerOf("answers", []))(callOf());
    assert.ok(seen >= before && seen <= performance.now(), `start ${seen} taken when the call entered`);
  });
});
