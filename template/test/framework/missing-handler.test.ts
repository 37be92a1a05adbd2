// What the README promises for a method the proto has and the handlers lack: not a type error (this file
// type-checks with `make lint` although its service implements one method of five), but UNIMPLEMENTED for
// every call, and a start-up warning naming each such method.
import assert from "node:assert/strict";
import { after, before, test } from "node:test";
import { Code, defineService } from "../../src/framework/index.js";
import { startTestServer, type TestServer } from "../../src/framework/testing/harness.js";
import { statusOf } from "../../src/framework/testing/status.js";
import { FixtureService } from "../gen/fixture/v1/fixture_pb.js";
import { fixtureService } from "./fixtures/fixture-service.js";

const onlyEcho = defineService(FixtureService, { handlers: { echo: fixtureService.handlers.echo } });

let server: TestServer;
before(async () => {
  server = await startTestServer([onlyEcho]);
});
after(() => server.close());

test("a method without a handler is a start-up warning naming it, and answers UNIMPLEMENTED", async () => {
  const warned = server.logs.filter((l) => l.level === "warn" || l.level === 40).map((l) => String(l.msg));
  for (const name of ["Countdown", "Fail", "Sum", "Chat"])
    assert.ok(
      warned.some((m) => m.startsWith(`no handler for ${name} `)),
      `${name}: ${warned.join("; ")}`,
    );
  assert.ok(!warned.some((m) => m.startsWith("no handler for Echo ")));
  const client = server.client(FixtureService);
  assert.equal((await client.echo({ message: "hi" })).message, "hi");
  assert.equal((await statusOf(client.fail({}))).code, Code.UNIMPLEMENTED);
});
