import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import { after, before, test } from "node:test";
import { promisify } from "node:util";
import { startTestServer, type TestServer } from "../src/framework/testing/harness.js";
import { exampleService } from "../src/service/example-service.js";

const run = promisify(execFile);

/** The real `buf curl`, which knows nothing of our protos: everything it learns comes from reflection. */
async function bufCurl(...args: string[]): Promise<string> {
  const { stdout } = await run("node_modules/.bin/buf", ["curl", "--protocol", "grpc", "--http2-prior-knowledge", ...args]);
  return stdout;
}

let server: TestServer;
before(async () => {
  server = await startTestServer([exampleService]);
});
after(() => server.close());

test("reflection lists the service's methods and the health service", async () => {
  const methods = (await bufCurl("--list-methods", `http://${server.grpcAddress}`)).trim().split("\n");
  for (const m of [
    "example.v1.ExampleService/Echo",
    "example.v1.ExampleService/Countdown",
    "example.v1.ExampleService/Fail",
    "grpc.health.v1.Health/Check",
    "grpc.health.v1.Health/Watch",
  ]) {
    assert.ok(methods.includes(m), `${m} in ${methods.join(", ")}`);
  }
});

test("buf curl calls Health/Check and Echo through reflection", async () => {
  assert.deepEqual(JSON.parse(await bufCurl(`http://${server.grpcAddress}/grpc.health.v1.Health/Check`, "-d", "{}")), {
    status: "SERVING",
  });
  const echo = JSON.parse(
    await bufCurl(`http://${server.grpcAddress}/example.v1.ExampleService/Echo`, "-d", '{"message":"via reflection"}'),
  );
  assert.equal(echo.message, "via reflection");
});

test("both reflection protocols answer: v1 and v1alpha", async () => {
  for (const protocol of ["grpc-v1", "grpc-v1alpha"]) {
    const services = await bufCurl("--reflect-protocol", protocol, "--list-services", `http://${server.grpcAddress}`);
    assert.match(services, /^example\.v1\.ExampleService$/m, protocol);
  }
});
