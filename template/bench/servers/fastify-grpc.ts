// The tcp gateway's floor: a bare fastify route that decodes the JSON body with protobuf-es, calls a bare
// @grpc/grpc-js server in the same process over loopback with a grpc-js client, and answers the JSON:
// the gateway's architecture in tcp mode without the framework (no interceptors, logging, metrics,
// metadata mapping or routing of its own).
import { fromBinary, fromJsonString, toBinary, toJsonString } from "@bufbuild/protobuf";
import { Client, credentials, Metadata, Server, ServerCredentials } from "@grpc/grpc-js";
import Fastify from "fastify";
import { type EchoRequest, EchoRequestSchema, type EchoResponse, EchoResponseSchema, Service } from "../proto.js";
import { echo, port, serve } from "./common.js";

const path = `/${Service.typeName}/${Service.method.echo.name}`;
const serializeRequest = (m: EchoRequest) => Buffer.from(toBinary(EchoRequestSchema, m));
const deserializeResponse = (bytes: Buffer) => fromBinary(EchoResponseSchema, bytes);

const grpc = new Server();
grpc.addService(
  {
    Echo: {
      path,
      requestStream: false,
      responseStream: false,
      requestSerialize: serializeRequest,
      requestDeserialize: (bytes: Buffer) => fromBinary(EchoRequestSchema, bytes),
      responseSerialize: (m: EchoResponse) => Buffer.from(toBinary(EchoResponseSchema, m)),
      responseDeserialize: deserializeResponse,
    },
  },
  { Echo: (call: { request: EchoRequest }, callback: (err: null, value: EchoResponse) => void) => callback(null, echo(call.request)) },
);
const grpcPort = await new Promise<number>((resolve, reject) =>
  grpc.bindAsync("127.0.0.1:0", ServerCredentials.createInsecure(), (err, bound) => (err ? reject(err) : resolve(bound))),
);
const client = new Client(`127.0.0.1:${grpcPort}`, credentials.createInsecure());

const app = Fastify({ logger: false });
app.removeContentTypeParser(["application/json"]);
app.addContentTypeParser(["application/json"], { parseAs: "string" }, (_req, body, done) => done(null, body));
app.post("/api/v1/echo", (req, reply) => {
  const request = fromJsonString(EchoRequestSchema, req.body as string);
  client.makeUnaryRequest(path, serializeRequest, deserializeResponse, request, new Metadata(), {}, (err, response) => {
    if (err || !response) return reply.code(500).send({ message: String(err) });
    return reply.type("application/json").send(toJsonString(EchoResponseSchema, response, { alwaysEmitImplicit: true }));
  });
});
await app.listen({ host: "127.0.0.1", port: port() });
serve(port());
