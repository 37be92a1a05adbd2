import type { Message } from "@bufbuild/protobuf";
import type { Interceptor } from "../call/types.js";

/**
 * Per-request debug logging: a true `debug` or `enable_debug` field, or the debug header
 * set to `debug`, makes this call's logger log at debug whatever LOG_LEVEL says.
 */
export function debugLog(headerName: string): Interceptor {
  const header = headerName.toLowerCase();
  return (next, method) => {
    // Which flag fields the request type has is known at start-up.
    const flags = method.desc.input.fields
      .filter((f) => (f.name === "debug" || f.name === "enable_debug") && f.fieldKind === "scalar")
      .map((f) => f.localName);
    return (call) => {
      const request = call.request as Message & Record<string, unknown>;
      if (flags.some((f) => request[f] === true) || call.ctx.metadata.get(header)[0] === "debug") call.ctx.setDebug(true);
      return next(call);
    };
  };
}
