import {
  clone,
  create,
  createFileRegistry,
  createRegistry,
  type DescFile,
  type DescService,
  type MessageInitShape,
  type Registry,
  toBinary,
} from "@bufbuild/protobuf";
import { FileDescriptorProtoSchema } from "@bufbuild/protobuf/wkt";
import { type Server, type ServerDuplexStream, status } from "@grpc/grpc-js";
import {
  file_grpc_reflection_v1_reflection,
  ServerReflection,
  type ServerReflectionRequest,
  type ServerReflectionResponse,
  ServerReflectionResponseSchema,
} from "../../gen/grpc/reflection/v1/reflection_pb.js";
import { grpcMethodDefinition } from "./grpc-definition.js";

type Answer = NonNullable<MessageInitShape<typeof ServerReflectionResponseSchema>["messageResponse"]>;

/** A file and everything it imports, each once, dependencies first. */
export function withDependencies(files: readonly DescFile[]): DescFile[] {
  const seen = new Set<DescFile>();
  const ordered: DescFile[] = [];
  const visit = (file: DescFile) => {
    if (seen.has(file)) return;
    seen.add(file);
    for (const dep of file.dependencies) visit(dep);
    ordered.push(file);
  };
  for (const file of files) visit(file);
  return ordered;
}

/**
 * Answers reflection requests from the protobuf-es descriptors already in memory, so
 * clients such as `buf curl` and grpcurl see the real files, custom options included.
 */
class ReflectionIndex {
  readonly #registry: Registry;
  /** Keyed by the file's real name, `example/v1/example.proto` (protobuf-es's `DescFile.name` drops `.proto`). */
  readonly #files: Map<string, DescFile>;
  readonly #services: string[];
  readonly #encoded = new Map<DescFile, Uint8Array>();

  /** `services` are the ones actually served: only they are listed, though every file stays resolvable. */
  constructor(services: readonly DescService[]) {
    const all = withDependencies(services.map((s) => s.file));
    this.#files = new Map(all.map((f) => [f.proto.name, f]));
    this.#registry = createRegistry(...all);
    this.#services = [...new Set(services.map((s) => s.typeName))];
  }

  answer(request: ServerReflectionRequest): Answer {
    const r = request.messageRequest;
    switch (r.case) {
      case "listServices":
        return { case: "listServicesResponse", value: { service: this.#services.map((name) => ({ name })) } };
      case "fileByFilename":
        return this.#file(this.#files.get(r.value), `file ${r.value}`);
      case "fileContainingSymbol":
        return this.#file(this.#fileOfSymbol(r.value), `symbol ${r.value}`);
      case "fileContainingExtension": {
        const extendee = this.#registry.getMessage(r.value.containingType);
        const extension = extendee && this.#registry.getExtensionFor(extendee, r.value.extensionNumber);
        return this.#file(extension?.file, `extension ${r.value.extensionNumber} of ${r.value.containingType}`);
      }
      case "allExtensionNumbersOfType": {
        const numbers: number[] = [];
        for (const d of this.#registry) if (d.kind === "extension" && d.extendee.typeName === r.value) numbers.push(d.number);
        if (!this.#registry.getMessage(r.value)) return notFound(`type ${r.value}`);
        return { case: "allExtensionNumbersResponse", value: { baseTypeName: r.value, extensionNumber: numbers } };
      }
      default:
        return { case: "errorResponse", value: { errorCode: status.INVALID_ARGUMENT, errorMessage: "empty request" } };
    }
  }

  /** Messages, enums, services, extensions; methods and fields through their parent. */
  #fileOfSymbol(symbol: string): DescFile | undefined {
    const desc = this.#registry.get(symbol);
    if (desc) return desc.file;
    const parent = symbol.slice(0, symbol.lastIndexOf("."));
    return parent ? this.#registry.get(parent)?.file : undefined;
  }

  /** The file with all its dependencies: clients resolve imports from the same response. */
  #file(file: DescFile | undefined, what: string): Answer {
    if (!file) return notFound(what);
    const fileDescriptorProto = withDependencies([file])
      .reverse()
      .map((f) => this.#bytes(f));
    return { case: "fileDescriptorResponse", value: { fileDescriptorProto } };
  }

  #bytes(file: DescFile): Uint8Array {
    let bytes = this.#encoded.get(file);
    if (!bytes) this.#encoded.set(file, (bytes = toBinary(FileDescriptorProtoSchema, file.proto)));
    return bytes;
  }
}

function notFound(what: string): Answer {
  return { case: "errorResponse", value: { errorCode: status.NOT_FOUND, errorMessage: `${what} not found` } };
}

/**
 * grpc/reflection/v1alpha/reflection.proto, made from the v1 file: upstream, v1alpha is the same
 * file under another package (only comments and language options differ), so clients that describe the
 * v1alpha service get a real descriptor without a second copy of the proto in the repository.
 */
function reflectionV1alphaFile(): DescFile {
  const v1 = file_grpc_reflection_v1_reflection;
  const proto = clone(FileDescriptorProtoSchema, v1.proto);
  proto.name = "grpc/reflection/v1alpha/reflection.proto";
  proto.package = "grpc.reflection.v1alpha";
  proto.options = undefined;
  const rename = (typeName: string) => typeName.replace(".grpc.reflection.v1.", ".grpc.reflection.v1alpha.");
  for (const message of proto.messageType) for (const field of message.field) field.typeName = rename(field.typeName);
  for (const service of proto.service) {
    for (const method of service.method) {
      method.inputType = rename(method.inputType);
      method.outputType = rename(method.outputType);
    }
  }
  const file = createFileRegistry(proto, () => undefined).getFile(proto.name);
  if (!file) throw new Error("reflection: cannot build the v1alpha descriptor");
  return file;
}

/**
 * Server reflection v1 and v1alpha (same messages, other package). `services` are the services the server
 * serves; reflection lists them and itself, and resolves every file they import.
 */
export function addReflection(server: Server, services: readonly DescService[]): void {
  // Indexed on the first reflection request rather than at start-up, where it was ~2 % of the work to ready:
  // only tools (buf curl, grpcurl) ask, and a person waits for their answer anyway.
  let index: ReflectionIndex | undefined;
  const indexed = () => (index ??= new ReflectionIndex([...services, ServerReflection, ...reflectionV1alphaFile().services]));
  const method = ServerReflection.method.serverReflectionInfo;
  const handler = (call: ServerDuplexStream<ServerReflectionRequest, ServerReflectionResponse>) => {
    call.on("data", (request: ServerReflectionRequest) => {
      let messageResponse: Answer;
      try {
        messageResponse = indexed().answer(request);
      } catch {
        messageResponse = { case: "errorResponse", value: { errorCode: status.INTERNAL, errorMessage: "reflection failed" } };
      }
      call.write(create(ServerReflectionResponseSchema, { validHost: request.host, originalRequest: request, messageResponse }));
    });
    call.on("end", () => call.end());
  };
  for (const pkg of ["grpc.reflection.v1", "grpc.reflection.v1alpha"]) {
    const definition = { ...grpcMethodDefinition(method), path: `/${pkg}.ServerReflection/ServerReflectionInfo` };
    server.addService({ ServerReflectionInfo: definition }, { ServerReflectionInfo: handler });
  }
}
