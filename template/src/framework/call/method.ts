import { create, type DescMethod, type Message } from "@bufbuild/protobuf";
import type { MethodInfo } from "./types.js";

/** What the chain knows about a method, from its descriptor; computed once per method at start-up. */
export function methodInfo(desc: DescMethod): MethodInfo {
  return {
    desc,
    service: desc.parent.typeName,
    name: desc.name,
    path: `/${desc.parent.typeName}/${desc.name}`,
    kind: desc.methodKind,
  };
}

const emptyRequests = new WeakMap<DescMethod, Message>();

/** The `request` of a client-streaming or bidi call: one empty message per method, made on first use. */
export function emptyRequestOf(method: MethodInfo): Message {
  let empty = emptyRequests.get(method.desc);
  if (!empty) emptyRequests.set(method.desc, (empty = Object.freeze(create(method.desc.input)) as Message));
  return empty;
}
