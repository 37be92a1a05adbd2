import { setTimeout as sleep } from "node:timers/promises";
import { timestampNow } from "@bufbuild/protobuf/wkt";
import { Code, claimsOf, codeName, defineService, every, GrpcError } from "../framework/index.js";
import { ExampleService } from "../gen/example/v1/example_pb.js";

/**
 * The service's handlers: plain async functions typed from the generated code.
 * Requests arrive validated (see the buf.validate rules in the proto).
 */
export const exampleService = defineService(ExampleService, {
  handlers: {
    async echo(request, ctx) {
      const receivedAt = timestampNow();
      // Shows only for calls that asked for debug logs (debug: true or the x-debug-log-level header).
      ctx.logger.debug({ delayMs: request.delayMs }, "echo received");
      // With JWT auth on, the token's verified claims are on the context and `sub` names the caller: here it
      // joins every log line of the call. A handler that cannot work without a caller calls requireClaims(ctx)
      // instead, which answers INTERNAL "missing claims" when the call carried none.
      const sub = claimsOf(ctx)?.sub;
      if (sub !== undefined) ctx.addToContext("sub", sub);
      if (request.delayMs > 0) await sleep(request.delayMs, undefined, { signal: ctx.signal });
      return { message: request.message, traceId: ctx.traceId, receivedAt };
    },

    async *countdown(request, ctx) {
      for (let remaining = request.from; remaining >= 1; remaining--) {
        yield { remaining };
        // Aborts as soon as the client goes away, which ends the stream early.
        if (remaining > 1 && request.intervalMs > 0) await sleep(request.intervalMs, undefined, { signal: ctx.signal });
      }
    },

    async fail(request) {
      if (request.panic) throw new Error("panic requested by Fail");
      if (request.code !== Code.OK) throw new GrpcError(request.code, request.message || codeName(request.code));
      return {};
    },

    // Client-streaming: each read waits for the client's next message; the answer goes once it half-closes.
    async sum(requests) {
      let sum = 0n;
      let count = 0;
      for await (const request of requests) {
        sum += request.value;
        count++;
      }
      return { sum, count };
    },

    // Bidi: each answer is yielded (and taken by the transport) before the next request is read.
    async *chat(requests) {
      let seq = 0;
      for await (const request of requests) yield { text: request.text, seq: ++seq };
    },
  },

  // Background workers: started once the servers listen, restarted with back-off if they throw, stopped on
  // shutdown after the drain wait. This one only shows the shape: a debug line every 30 s (± 10 %).
  workers: [{ name: "heartbeat", run: every(30_000, (_signal, log) => log.debug("heartbeat"), { jitter: 0.1 }) }],
});
