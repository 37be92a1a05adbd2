import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { Code, defineService, GrpcError, type NamedInterceptor } from "../../src/framework/index.js";
import { startTestServer, type TestServer } from "../../src/framework/testing/harness.js";
import { statusOf } from "../../src/framework/testing/status.js";
import { FixtureService } from "../gen/fixture/v1/fixture_pb.js";
import { fixtureService } from "./fixtures/fixture-service.js";

// The README's "Your own interceptor", as written there.
/** Calls without an x-tenant header are refused before the rest of the chain runs. */
const requireTenant: NamedInterceptor = {
  name: "requireTenant",
  interceptor: (next) => (call) => {
    if (call.ctx.metadata.get("x-tenant").length === 0) throw new GrpcError(Code.INVALID_ARGUMENT, "missing x-tenant header");
    return next(call);
  },
};

const tenantService = defineService(FixtureService, {
  handlers: fixtureService.handlers,
  authorize: fixtureService.authorize,
  preStart(app) {
    app.prepend(requireTenant);
  },
});

describe("a custom interceptor prepended in preStart", () => {
  let server: TestServer;
  before(async () => {
    server = await startTestServer([tenantService], { HTTP_HEADER_PREFIXES: "x-tenant" });
  });
  after(() => server.close());

  test("refuses gRPC and HTTP calls without the header, with its own status, and lets the others through", async () => {
    const refused = await statusOf(server.client(FixtureService).echo({ message: "hi" }));
    assert.deepEqual([refused.code, refused.details], [Code.INVALID_ARGUMENT, "missing x-tenant header"]);
    const reply = await server.client(FixtureService).echo({ message: "hi" }, { metadata: { "x-tenant": "t1" } });
    assert.equal(reply.message, "hi");

    const post = (headers: Record<string, string>) =>
      fetch(`${server.httpUrl}/api/v1/echo`, {
        method: "POST",
        headers: { "content-type": "application/json", ...headers },
        body: '{"message":"hi"}',
      });
    const res = await post({});
    assert.equal(res.status, 400);
    assert.deepEqual(await res.json(), { code: Code.INVALID_ARGUMENT, message: "missing x-tenant header", details: [] });
    assert.equal((await post({ "x-tenant": "t1" })).status, 200);
  });

  test("runs first: a refused call leaves no response-time line (the chain below it never ran)", async () => {
    const before = server.logs.length;
    await statusOf(server.client(FixtureService).echo({ message: "unlogged" }));
    assert.equal(server.logs.slice(before).filter((l) => l.msg === "response time").length, 0);
  });
});
