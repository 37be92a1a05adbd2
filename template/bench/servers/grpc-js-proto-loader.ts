// Reference: a bare @grpc/grpc-js server loading the same proto with @grpc/proto-loader (protobufjs, what most
// Node gRPC services use; its codec is faster than protobuf-es's), with the same Echo handler and nothing else.
import { randomUUID } from "node:crypto";
import path from "node:path";
import { fileURLToPath } from "node:url";
import {
  loadPackageDefinition,
  Server,
  ServerCredentials,
  type ServerUnaryCall,
  type ServiceDefinition,
  type sendUnaryData,
} from "@grpc/grpc-js";
import { loadSync } from "@grpc/proto-loader";
import { Service } from "../proto.js";
import { counts, port, serve } from "./common.js";

interface EchoRequest {
  message: string;
  traceId: string;
}

// The fixture's proto is in test/proto/; the protos it imports (buf/validate, google/api) are in proto/.
const TEST_PROTO = fileURLToPath(new URL("../../test/proto", import.meta.url));
const PROTO = fileURLToPath(new URL("../../proto", import.meta.url));
const definition = loadSync(path.join(TEST_PROTO, `${Service.file.name}.proto`), {
  includeDirs: [TEST_PROTO, PROTO],
  longs: String,
  enums: String,
  defaults: true,
});
// The service's constructor, found by its full name ("fixture.v1.FixtureService") in the loaded package tree.
let node: unknown = loadPackageDefinition(definition);
for (const part of Service.typeName.split(".")) node = (node as Record<string, unknown>)[part];
const service = (node as { service: ServiceDefinition }).service;

const server = new Server();
server.addService(service, {
  [Service.method.echo.name]: (call: ServerUnaryCall<EchoRequest, unknown>, callback: sendUnaryData<unknown>) => {
    const now = Date.now();
    counts.ok++;
    callback(null, {
      message: call.request.message,
      traceId: call.request.traceId || randomUUID(),
      receivedAt: { seconds: String(Math.floor(now / 1000)), nanos: (now % 1000) * 1_000_000 },
    });
  },
});
server.bindAsync(`127.0.0.1:${port()}`, ServerCredentials.createInsecure(), (err, bound) => {
  if (err) throw err;
  serve(bound);
});
