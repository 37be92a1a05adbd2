// Reference: a bare @grpc/grpc-js server with the same Echo handler and protobuf-es (de)serialisation
// as the service, and nothing else (no interceptors, logging, metrics, validation, reflection or health).
import { fromBinary, toBinary } from "@bufbuild/protobuf";
import { Server, ServerCredentials, type ServerUnaryCall, type sendUnaryData } from "@grpc/grpc-js";
import { type EchoRequest, EchoRequestSchema, type EchoResponse, EchoResponseSchema, Service } from "../proto.js";
import { counts, echo, port, serve } from "./common.js";

const server = new Server();
server.addService(
  {
    Echo: {
      path: `/${Service.typeName}/${Service.method.echo.name}`,
      requestStream: false,
      responseStream: false,
      requestSerialize: (m: EchoRequest) => Buffer.from(toBinary(EchoRequestSchema, m)),
      requestDeserialize: (bytes: Buffer) => {
        try {
          return fromBinary(EchoRequestSchema, bytes);
        } catch (err) {
          counts.errors++; // grpc-js answers INTERNAL without calling the handler
          throw err;
        }
      },
      responseSerialize: (m: EchoResponse) => Buffer.from(toBinary(EchoResponseSchema, m)),
      responseDeserialize: (bytes: Buffer) => fromBinary(EchoResponseSchema, bytes),
    },
  },
  {
    Echo: (call: ServerUnaryCall<EchoRequest, EchoResponse>, callback: sendUnaryData<EchoResponse>) => {
      counts.ok++;
      callback(null, echo(call.request));
    },
  },
);
server.bindAsync(`127.0.0.1:${port()}`, ServerCredentials.createInsecure(), (err, bound) => {
  if (err) throw err;
  serve(bound);
});
