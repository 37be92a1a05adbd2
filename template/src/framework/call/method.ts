import type { DescMethod } from "@bufbuild/protobuf";
import type { MethodInfo } from "./types.js";

/** What the chain knows about a method, from its descriptor; computed once per method at start-up. */
export function methodInfo(desc: DescMethod): MethodInfo {
  if (desc.methodKind !== "unary" && desc.methodKind !== "server_streaming") {
    throw new Error(`${desc.parent.typeName}.${desc.name}: ${desc.methodKind} methods are not supported (unary and server streaming are)`);
  }
  return {
    desc,
    service: desc.parent.typeName,
    name: desc.name,
    path: `/${desc.parent.typeName}/${desc.name}`,
    kind: desc.methodKind,
  };
}
