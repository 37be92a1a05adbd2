/**
 * The client of the client-side balancing run: grpc-js with `dns:///<name>:<port>` and round_robin, calling Echo
 * in a few loops. Run inside a mount namespace whose /etc/hosts gives the name several addresses (fleet.ts).
 * Reads commands on stdin: `mark` starts counting the calls anew, `stop` ends the calls and prints one JSON line:
 * {"calls" (since the mark), "total", "failed" and "reasons" (of the whole run)}.
 */
import { createInterface } from "node:readline";
import { grpcClient, grpcUnary } from "./load.js";

const [target] = process.argv.slice(2);
if (!target) throw new Error("usage: balancing-client.ts dns:///name:port");
const client = grpcClient(target, {
  // round_robin, and a retry of UNAVAILABLE as production clients have (the framework's createClient does):
  // a Node client fails the calls it had queued but not sent when it reads a GOAWAY; grpc-js resends such a
  // call once by itself, and at 3 s ages over 4 replicas about 1 call in 2,000 met a second GOAWAY.
  "grpc.service_config": JSON.stringify({
    loadBalancingConfig: [{ round_robin: {} }],
    methodConfig: [
      {
        name: [{ service: "example.v1.ExampleService" }],
        retryPolicy: {
          maxAttempts: 3,
          initialBackoff: "0.05s",
          maxBackoff: "0.5s",
          backoffMultiplier: 2,
          retryableStatusCodes: ["UNAVAILABLE"],
        },
      },
    ],
  }),
  // grpc-js re-resolves the name when a connection goes away, at most this often (30 s by default).
  "grpc.dns_min_time_between_resolutions_ms": 500,
});
let calls = 0;
let total = 0;
let failed = 0;
const reasons: Record<string, number> = {};
let stopping = false;
const loops = Array.from({ length: 4 }, async () => {
  for (let i = 0; !stopping; i++) {
    calls++;
    total++;
    await grpcUnary(client, `b${i}`).catch((err: Error) => {
      failed++;
      reasons[err.message] = (reasons[err.message] ?? 0) + 1;
    });
    await new Promise((r) => setTimeout(r, 10));
  }
});
process.stdout.write("started\n");
for await (const line of createInterface({ input: process.stdin })) {
  if (line === "mark") {
    calls = 0;
    process.stdout.write("marked\n");
  } else if (line === "stop") {
    stopping = true;
    await Promise.all(loops);
    client.close();
    process.stdout.write(`${JSON.stringify({ calls, total, failed, reasons })}\n`);
    break;
  }
}
