// What `make new-interceptor` and `make new-worker` write: the part and its test. Edit these to change it.
import type { PartNames } from "../names.js";

export interface PartTemplateData {
  part: PartNames;
  /** The export name of the service it is registered in: `billingService`. */
  target: string;
  /** That service's module, from the repository root: `src/service/billing-service.js`. */
  serviceModule: string;
}

export const interceptorSource = ({ part, target }: PartTemplateData) => `import type { NamedInterceptor } from "../framework/index.js";

/**
 * ${part.kebab}: runs on every call, over gRPC and through the gateway, before the framework's own
 * interceptors (auth, timeout, rate limit, logging, validation, metrics, recovery). Registered in the
 * preStart of ${target}.
 */
export const ${part.exportName}: NamedInterceptor = {
  name: "${part.kebab}",
  // The outer function runs once per method at start-up: compute per-method things there, or return
  // \`next\` itself to skip a method at no cost. The inner one runs per call: throw a GrpcError to refuse
  // the call, or \`await next(call)\` to act on its result.
  interceptor: (next) => (call) => next(call),
};
`;

export const interceptorTest = ({ part, target, serviceModule }: PartTemplateData) => `${testHead(target, serviceModule)}
test("${part.kebab} runs first, before the framework's interceptors", () => {
  assert.equal(server.app.interceptorNames()[0], "${part.kebab}");
});
`;

export const workerSource = ({ part, target }: PartTemplateData) => `import { every, type Worker } from "../framework/index.js";

/**
 * ${part.kebab}: runs every 60 s (± 10 %) while the service is up, never overlapping itself; restarted
 * with back-off if it throws, stopped on shutdown (pass \`signal\` on to timers, fetches and queries).
 * Registered in the workers of ${target}.
 */
export const ${part.exportName}: Worker = {
  name: "${part.kebab}",
  run: every(60_000, (_signal, log) => {
    log.debug("${part.kebab}");
  }),
};
`;

export const workerTest = ({ part, target, serviceModule }: PartTemplateData) => `${testHead(target, serviceModule)}
test("${part.kebab} is started with the service", async () => {
  const metrics = await (await fetch(\`\${server.httpUrl}/metrics\`)).text();
  assert.match(metrics, /^worker_running\\{worker="${part.kebab}"\\} 1$/m);
});
`;

/** Both tests start the service the part is registered in. */
const testHead = (target: string, serviceModule: string) => `import assert from "node:assert/strict";
import { after, before, test } from "node:test";
import { startTestServer, type TestServer } from "../src/framework/testing/harness.js";
import { ${target} } from "../${serviceModule}";

let server: TestServer;
before(async () => {
  server = await startTestServer([${target}]);
});
after(() => server.close());
`;
