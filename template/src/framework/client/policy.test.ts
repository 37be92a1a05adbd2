import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { FixtureService } from "../../../test/gen/fixture/v1/fixture_pb.js";
import { Code } from "../call/status.js";
import { DEFAULT_BUDGET, serviceConfig } from "./policy.js";

const base = { service: FixtureService, retry: {}, methods: {}, budget: DEFAULT_BUDGET, loadBalancing: "round_robin" as const };

describe("the client's grpc-js service config", () => {
  test("defaults: 3 attempts on UNAVAILABLE with back-off, the retry budget, round_robin", () => {
    assert.deepEqual(JSON.parse(serviceConfig(base)), {
      loadBalancingConfig: [{ round_robin: {} }],
      methodConfig: [
        {
          name: [{ service: "fixture.v1.FixtureService" }],
          retryPolicy: {
            maxAttempts: 3,
            initialBackoff: "0.100s",
            maxBackoff: "1.000s",
            backoffMultiplier: 2,
            retryableStatusCodes: [Code.UNAVAILABLE],
          },
        },
      ],
      retryThrottling: { maxTokens: 10, tokenRatio: 0.1 },
    });
  });

  test("a method's own policy comes first; hedging is for methods the proto marks free of side effects", () => {
    const config = JSON.parse(
      serviceConfig({
        ...base,
        retry: false,
        budget: false,
        loadBalancing: "pick_first",
        methods: {
          echo: { hedging: { maxAttempts: 3, delayMs: 25 } },
          fail: { retry: { maxAttempts: 5, retryableCodes: [Code.UNAVAILABLE, Code.ABORTED] } },
        },
      }),
    );
    assert.deepEqual(config.methodConfig, [
      {
        name: [{ service: "fixture.v1.FixtureService", method: "Echo" }],
        hedgingPolicy: { maxAttempts: 3, hedgingDelay: "0.025s", nonFatalStatusCodes: [] },
      },
      {
        name: [{ service: "fixture.v1.FixtureService", method: "Fail" }],
        retryPolicy: {
          maxAttempts: 5,
          initialBackoff: "0.100s",
          maxBackoff: "1.000s",
          backoffMultiplier: 2,
          retryableStatusCodes: [14, 10],
        },
      },
      { name: [{ service: "fixture.v1.FixtureService" }] },
    ]);
    assert.equal(config.retryThrottling, undefined);
    assert.deepEqual(config.loadBalancingConfig, [{ pick_first: {} }]);
  });

  test("what gRFC A6 does not allow is refused when the client is made, naming the method", () => {
    assert.throws(
      () => serviceConfig({ ...base, methods: { fail: { hedging: { maxAttempts: 2, delayMs: 10 } } } }),
      /Fail may not be hedged.*idempotency_level/,
    );
    assert.throws(() => serviceConfig({ ...base, retry: { maxAttempts: 6 } }), /maxAttempts must be 1–5/);
    assert.throws(
      () => serviceConfig({ ...base, methods: { echo: { hedging: { maxAttempts: 9, delayMs: 10 } } } }),
      /hedging.maxAttempts must be 2–5/,
    );
    assert.throws(() => serviceConfig({ ...base, methods: { nope: {} } }), /has no method nope/);
    assert.throws(() => serviceConfig({ ...base, retry: { retryableCodes: [] } }), /a retryable code/);
    assert.throws(() => serviceConfig({ ...base, budget: { maxTokens: 0, tokenRatio: 0.1 } }), /maxTokens/);
  });
});
