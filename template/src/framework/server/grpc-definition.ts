import type { DescMethod, DescService, Message } from "@bufbuild/protobuf";
import type { MethodDefinition, ServiceDefinition } from "@grpc/grpc-js";
import { binaryCodec } from "../codec/codec.js";

/** A grpc-js method definition whose (de)serialisers are the compiled protobuf-es codecs, from the descriptor alone. */
export function grpcMethodDefinition(m: DescMethod): MethodDefinition<Message, Message> {
  const input = binaryCodec(m.input);
  const output = binaryCodec(m.output);
  return {
    path: `/${m.parent.typeName}/${m.name}`,
    requestStream: m.methodKind === "client_streaming" || m.methodKind === "bidi_streaming",
    responseStream: m.methodKind === "server_streaming" || m.methodKind === "bidi_streaming",
    requestSerialize: (message) => input.encode(message),
    requestDeserialize: (bytes) => input.decode(bytes),
    // The server may hand over bytes it already encoded (server/response-size.ts).
    responseSerialize: (message: Message | Buffer) => (message instanceof Uint8Array ? message : output.encode(message)),
    responseDeserialize: (bytes) => output.decode(bytes),
    originalName: m.localName,
  };
}

/** The grpc-js service definition of a protobuf-es service; used by the server and by clients alike. */
export function grpcServiceDefinition(service: DescService): ServiceDefinition {
  const definition: Record<string, MethodDefinition<Message, Message>> = {};
  for (const m of service.methods) definition[m.name] = grpcMethodDefinition(m);
  return definition as ServiceDefinition;
}
