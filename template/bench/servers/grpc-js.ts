// Reference: a bare @grpc/grpc-js server with the same handlers (Echo, and the streams Countdown, Sum and
// Chat) and protobuf-es (de)serialisation as the service, and nothing else (no interceptors, logging,
// metrics, validation, reflection or health).
import { once } from "node:events";
import { create, type DescMessage, fromBinary, type MessageShape, toBinary } from "@bufbuild/protobuf";
import {
  Server,
  ServerCredentials,
  type ServerDuplexStream,
  type ServerReadableStream,
  type ServerUnaryCall,
  type ServerWritableStream,
  type sendUnaryData,
} from "@grpc/grpc-js";
import {
  ChatRequestSchema,
  ChatResponseSchema,
  CountdownRequestSchema,
  CountdownResponseSchema,
  type EchoRequest,
  EchoRequestSchema,
  type EchoResponse,
  EchoResponseSchema,
  Service,
  SumRequestSchema,
  SumResponseSchema,
} from "../proto.js";
import { counts, echo, port, serve, sum } from "./common.js";

function method<I extends DescMessage, O extends DescMessage>(
  name: string,
  input: I,
  output: O,
  requestStream: boolean,
  responseStream: boolean,
) {
  return {
    path: `/${Service.typeName}/${name}`,
    requestStream,
    responseStream,
    requestSerialize: (m: MessageShape<I>) => Buffer.from(toBinary(input, m)),
    requestDeserialize: (bytes: Buffer) => {
      try {
        return fromBinary(input, bytes);
      } catch (err) {
        counts.errors++; // grpc-js answers INTERNAL without calling the handler
        throw err;
      }
    },
    responseSerialize: (m: MessageShape<O>) => Buffer.from(toBinary(output, m)),
    responseDeserialize: (bytes: Buffer) => fromBinary(output, bytes),
  };
}

type Countdown = MessageShape<typeof CountdownRequestSchema>;
type Sum = MessageShape<typeof SumRequestSchema>;
type Chat = MessageShape<typeof ChatRequestSchema>;

const server = new Server();
server.addService(
  {
    Echo: method(Service.method.echo.name, EchoRequestSchema, EchoResponseSchema, false, false),
    Countdown: method(Service.method.countdown.name, CountdownRequestSchema, CountdownResponseSchema, false, true),
    Sum: method(Service.method.sum.name, SumRequestSchema, SumResponseSchema, true, false),
    Chat: method(Service.method.chat.name, ChatRequestSchema, ChatResponseSchema, true, true),
  },
  {
    Echo: (call: ServerUnaryCall<EchoRequest, EchoResponse>, callback: sendUnaryData<EchoResponse>) => {
      counts.ok++;
      callback(null, echo(call.request));
    },
    // The streams as the service's handlers do them, written the way grpc-js offers (write, drain, for await).
    Countdown: async (call: ServerWritableStream<Countdown, unknown>) => {
      for (let remaining = call.request.from; remaining >= 1; remaining--) {
        if (!call.write(create(CountdownResponseSchema, { remaining }))) await once(call, "drain");
      }
      counts.ok++;
      call.end();
    },
    Sum: async (call: ServerReadableStream<Sum, unknown>, callback: sendUnaryData<unknown>) => {
      const total = await sum(call as AsyncIterable<Sum>);
      counts.ok++;
      callback(null, create(SumResponseSchema, total));
    },
    Chat: async (call: ServerDuplexStream<Chat, unknown>) => {
      let seq = 0;
      for await (const request of call) {
        if (!call.write(create(ChatResponseSchema, { text: (request as Chat).text, seq: ++seq }))) await once(call, "drain");
      }
      counts.ok++;
      call.end();
    },
  },
);
server.bindAsync(`127.0.0.1:${port()}`, ServerCredentials.createInsecure(), (err, bound) => {
  if (err) throw err;
  serve(bound);
});
