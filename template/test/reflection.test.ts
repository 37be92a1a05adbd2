import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import { once } from "node:events";
import { after, before, test } from "node:test";
import { promisify } from "node:util";
import { create, fromBinary, getExtension, type MessageInitShape } from "@bufbuild/protobuf";
import { FileDescriptorProtoSchema } from "@bufbuild/protobuf/wkt";
import { Client, credentials } from "@grpc/grpc-js";
import { grpcMethodDefinition } from "../src/framework/server/grpc-definition.js";
import { startTestServer, type TestServer } from "../src/framework/testing/harness.js";
import { http } from "../src/gen/google/api/annotations_pb.js";
import {
  ServerReflection,
  ServerReflectionRequestSchema,
  type ServerReflectionResponse,
} from "../src/gen/grpc/reflection/v1/reflection_pb.js";
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

test("reflection serves the real descriptors, custom options included, and NOT_FOUND for unknown symbols", async () => {
  const grpc = new Client(server.grpcAddress, credentials.createInsecure());
  const d = grpcMethodDefinition(ServerReflection.method.serverReflectionInfo);
  const call = grpc.makeBidiStreamRequest(d.path, d.requestSerialize, d.responseDeserialize);
  const ask = async (messageRequest: MessageInitShape<typeof ServerReflectionRequestSchema>["messageRequest"]) => {
    call.write(create(ServerReflectionRequestSchema, { messageRequest }));
    const [response] = (await once(call, "data")) as [ServerReflectionResponse];
    return response.messageResponse;
  };
  try {
    const found = await ask({ case: "fileContainingSymbol", value: "example.v1.ExampleService.Echo" });
    assert.equal(found.case, "fileDescriptorResponse");
    const files = found.value.fileDescriptorProto.map((b) => fromBinary(FileDescriptorProtoSchema, b));
    assert.equal(files[0]?.name, "example/v1/example.proto");
    assert.ok(
      files.some((f) => f.name === "google/api/annotations.proto"),
      "dependencies come along",
    );
    const echo = files[0]!.service[0]!.method.find((m) => m.name === "Echo")!;
    assert.equal(getExtension(echo.options!, http).pattern.value, "/api/v1/echo");

    const missing = await ask({ case: "fileContainingSymbol", value: "nope.v1.Nothing" });
    assert.equal(missing.case, "errorResponse");
    assert.equal(missing.value.errorCode, 5);
  } finally {
    call.end();
    grpc.close();
  }
});
