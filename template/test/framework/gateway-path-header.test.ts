// The gateway tells the gRPC server which HTTP path a call came in on (x-gateway-http-path), for the call's log
// lines. Any gRPC client can send that header too: only the gateway's own value is believed, and handlers never
// see the header, whoever sent it.
import assert from "node:assert/strict";
import { after, before, test } from "node:test";
import { Metadata } from "@grpc/grpc-js";
import { defineService } from "../../src/framework/index.js";
import { startTestServer, type TestServer } from "../../src/framework/testing/harness.js";
import { FixtureService } from "../gen/fixture/v1/fixture_pb.js";
import { fixtureService } from "./fixtures/fixture-service.js";

const seen: string[][] = [];
const probe = defineService(FixtureService, {
  handlers: {
    ...fixtureService.handlers,
    echo: (request, ctx) => {
      seen.push(Object.keys(ctx.metadata.getMap()));
      return { message: request.message };
    },
  },
});

let server: TestServer;
before(async () => {
  server = await startTestServer([probe], { GATEWAY_MODE: "tcp" });
});
after(() => server.close());

const lineOf = (message: string) => server.logs.find((l) => l.msg === "response time" && l.trace === message);

test("a gRPC client's x-gateway-http-path is not logged as the call's HTTP path, and the handler does not see it", async () => {
  const metadata = new Metadata();
  metadata.set("x-gateway-http-path", "/api/v1/forged");
  metadata.set("x-trace-id", "forged-path");
  await server.client(FixtureService).echo({ message: "hi" }, { metadata });
  const line = lineOf("forged-path");
  assert.ok(line, "the call's response-time line");
  assert.equal(line.httpPath, undefined);
  assert.ok(!seen.at(-1)?.includes("x-gateway-http-path"), `metadata keys: ${seen.at(-1)}`);
});

test("a call through the gateway (tcp) is logged with its HTTP path, and the handler does not see the header", async () => {
  const res = await fetch(`${server.httpUrl}/api/v1/echo`, {
    method: "POST",
    headers: { "content-type": "application/json", "x-trace-id": "through-gateway" },
    body: JSON.stringify({ message: "hi" }),
  });
  assert.equal(res.status, 200, await res.text());
  const line = lineOf("through-gateway");
  assert.ok(line, "the call's response-time line");
  assert.equal(line.httpPath, "/api/v1/echo");
  assert.ok(!seen.at(-1)?.includes("x-gateway-http-path"), `metadata keys: ${seen.at(-1)}`);
});
