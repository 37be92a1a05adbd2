import { type DescFile, toBinary } from "@bufbuild/protobuf";
import { FileDescriptorProtoSchema } from "@bufbuild/protobuf/wkt";
import type { Server } from "@grpc/grpc-js";
import { ReflectionService } from "@grpc/reflection";

/** A file and everything it imports, each once, dependencies first. */
export function withDependencies(files: readonly DescFile[]): DescFile[] {
  const seen = new Set<string>();
  const ordered: DescFile[] = [];
  const visit = (file: DescFile) => {
    if (seen.has(file.name)) return;
    seen.add(file.name);
    for (const dep of file.dependencies) visit(dep);
    ordered.push(file);
  };
  for (const file of files) visit(file);
  return ordered;
}

/**
 * Server reflection (v1 and v1alpha) fed with the real descriptor bytes embedded in the
 * generated code. (@grpc/reflection's usual proto-loader route garbles type names, and
 * `buf curl` then cannot find the health service.)
 */
export function addReflection(server: Server, files: readonly DescFile[]): void {
  const fileDescriptorProtos = withDependencies(files).map((f) => Buffer.from(toBinary(FileDescriptorProtoSchema, f.proto)));
  // ReflectionService only reads `fileDescriptorProtos` from each package-definition entry.
  const definition = { descriptors: { fileDescriptorProtos } } as unknown as ConstructorParameters<typeof ReflectionService>[0];
  new ReflectionService(definition).addToServer(server);
}
