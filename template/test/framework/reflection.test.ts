import assert from "node:assert/strict";
import { once } from "node:events";
import { after, before, describe, test } from "node:test";
import { create, fromBinary, getExtension, type MessageInitShape } from "@bufbuild/protobuf";
import { FileDescriptorProtoSchema } from "@bufbuild/protobuf/wkt";
import { Client, credentials } from "@grpc/grpc-js";
import { grpcMethodDefinition } from "../../src/framework/server/grpc-definition.js";
import { startTestServer, type TestServer } from "../../src/framework/testing/harness.js";
import { http } from "../../src/gen/google/api/annotations_pb.js";
import {
  ServerReflection,
  ServerReflectionRequestSchema,
  type ServerReflectionResponse,
} from "../../src/gen/grpc/reflection/v1/reflection_pb.js";
import { fixtureService } from "./fixtures/fixture-service.js";
import { createLibrary } from "./gateway-library.js";
import { bufCurl } from "./support/buf-curl.js";

let server: TestServer;
before(async () => {
  server = await startTestServer([fixtureService]);
});
after(() => server.close());

test("reflection lists the service's methods and the health service", async () => {
  const methods = (await bufCurl("--list-methods", `http://${server.grpcAddress}`)).trim().split("\n");
  for (const m of [
    "fixture.v1.FixtureService/Echo",
    "fixture.v1.FixtureService/Countdown",
    "fixture.v1.FixtureService/Fail",
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
    await bufCurl(`http://${server.grpcAddress}/fixture.v1.FixtureService/Echo`, "-d", '{"message":"via reflection"}'),
  );
  assert.equal(echo.message, "via reflection");
});

test("both reflection protocols answer: v1 and v1alpha", async () => {
  for (const protocol of ["grpc-v1", "grpc-v1alpha"]) {
    const services = await bufCurl("--reflect-protocol", protocol, "--list-services", `http://${server.grpcAddress}`);
    assert.match(services, /^fixture\.v1\.FixtureService$/m, protocol);
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
    const found = await ask({ case: "fileContainingSymbol", value: "fixture.v1.FixtureService.Echo" });
    assert.equal(found.case, "fileDescriptorResponse");
    const files = found.value.fileDescriptorProto.map((b) => fromBinary(FileDescriptorProtoSchema, b));
    assert.equal(files[0]?.name, "fixture/v1/fixture.proto");
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

/**
 * A raw reflection client on either protocol's path (v1 and v1alpha share their messages), so the
 * answers are checked exactly as a client receives them.
 */
function rawReflection(address: string, pkg: "grpc.reflection.v1" | "grpc.reflection.v1alpha") {
  const grpc = new Client(address, credentials.createInsecure());
  const d = grpcMethodDefinition(ServerReflection.method.serverReflectionInfo);
  const call = grpc.makeBidiStreamRequest(`/${pkg}.ServerReflection/ServerReflectionInfo`, d.requestSerialize, d.responseDeserialize);
  return {
    async ask(messageRequest: MessageInitShape<typeof ServerReflectionRequestSchema>["messageRequest"]) {
      call.write(create(ServerReflectionRequestSchema, { messageRequest }));
      const [response] = (await once(call, "data")) as [ServerReflectionResponse];
      return response.messageResponse;
    },
    close() {
      call.end();
      grpc.close();
    },
  };
}

describe("reflection of test-only protos, raw v1 and v1alpha clients", () => {
  // library.proto declares LibraryService and ShelfService; only LibraryService is served.
  let library: TestServer;
  before(async () => {
    library = await startTestServer([createLibrary().service]);
  });
  after(() => library.close());

  for (const pkg of ["grpc.reflection.v1", "grpc.reflection.v1alpha"] as const) {
    test(`${pkg}: list_services names the served services, health and both reflection versions, nothing else`, async () => {
      const client = rawReflection(library.grpcAddress, pkg);
      try {
        const answer = await client.ask({ case: "listServices", value: "" });
        assert.equal(answer.case, "listServicesResponse");
        assert.deepEqual(answer.value.service.map((s) => s.name).sort(), [
          "gatewaytest.v1.LibraryService",
          "grpc.health.v1.Health",
          "grpc.reflection.v1.ServerReflection",
          "grpc.reflection.v1alpha.ServerReflection",
        ]);
      } finally {
        client.close();
      }
    });

    test(`${pkg}: file_by_filename takes the real file name and answers the file first, then its imports`, async () => {
      const client = rawReflection(library.grpcAddress, pkg);
      try {
        const found = await client.ask({ case: "fileByFilename", value: "gatewaytest/v1/library.proto" });
        assert.equal(found.case, "fileDescriptorResponse");
        const names = found.value.fileDescriptorProto.map((b) => fromBinary(FileDescriptorProtoSchema, b).name);
        assert.equal(names[0], "gatewaytest/v1/library.proto");
        for (const dep of ["google/api/annotations.proto", "google/api/http.proto", "google/protobuf/timestamp.proto"]) {
          assert.ok(names.includes(dep), `${dep} in ${names.join(", ")}`);
        }
        const dependency = await client.ask({ case: "fileByFilename", value: "google/protobuf/timestamp.proto" });
        assert.equal(dependency.case, "fileDescriptorResponse");
        assert.equal(
          fromBinary(FileDescriptorProtoSchema, dependency.value.fileDescriptorProto[0]!).name,
          "google/protobuf/timestamp.proto",
        );

        // protobuf-es names files without `.proto` internally; that name is not a file name.
        const stem = await client.ask({ case: "fileByFilename", value: "gatewaytest/v1/library" });
        assert.equal(stem.case, "errorResponse");
        assert.equal(stem.value.errorCode, 5);
        assert.equal(stem.value.errorMessage, "file gatewaytest/v1/library not found");
      } finally {
        client.close();
      }
    });

    test(`${pkg}: the reflection services themselves are described, v1alpha under its own package and file`, async () => {
      const client = rawReflection(library.grpcAddress, pkg);
      try {
        for (const [symbol, file] of [
          ["grpc.reflection.v1.ServerReflection", "grpc/reflection/v1/reflection.proto"],
          ["grpc.reflection.v1alpha.ServerReflection", "grpc/reflection/v1alpha/reflection.proto"],
        ] as const) {
          const found = await client.ask({ case: "fileContainingSymbol", value: symbol });
          assert.equal(found.case, "fileDescriptorResponse", symbol);
          const proto = fromBinary(FileDescriptorProtoSchema, found.value.fileDescriptorProto[0]!);
          assert.equal(proto.name, file);
          const method = proto.service[0]!.method[0]!;
          const pkgOfSymbol = symbol.slice(0, symbol.lastIndexOf("."));
          assert.equal(method.inputType, `.${pkgOfSymbol}.ServerReflectionRequest`);
          assert.equal(method.outputType, `.${pkgOfSymbol}.ServerReflectionResponse`);
          const byName = await client.ask({ case: "fileByFilename", value: file });
          assert.equal(byName.case, "fileDescriptorResponse", file);
        }
      } finally {
        client.close();
      }
    });
  }

  test("buf curl lists the methods of the served services only, over both reflection protocols", async () => {
    for (const protocol of ["grpc-v1", "grpc-v1alpha"]) {
      const methods = (await bufCurl("--reflect-protocol", protocol, "--list-methods", `http://${library.grpcAddress}`)).trim().split("\n");
      assert.ok(methods.includes("gatewaytest.v1.LibraryService/GetBook"), protocol);
      assert.ok(methods.includes("grpc.reflection.v1alpha.ServerReflection/ServerReflectionInfo"), protocol);
      assert.ok(!methods.some((m) => m.startsWith("gatewaytest.v1.ShelfService/")), `${protocol}: ${methods.join(", ")}`);
    }
  });
});
