import type { Message } from "@bufbuild/protobuf";
import { staged } from "../call/chain.js";
import { firstValue } from "../call/metadata-values.js";
import { type Interceptor, type MethodInfo, streamsRequests } from "../call/types.js";

/**
 * Per-request debug logging: a true `debug` or `enable_debug` field, or the debug header
 * set to `debug`, makes this call's logger log at debug whatever LOG_LEVEL says. A client-streaming
 * or bidi call reads the fields of its first message.
 */
export function debugLog(headerName: string): Interceptor {
  const header = headerName.toLowerCase();
  /** Which flag fields the request type has is known at start-up. */
  const flagsOf = (method: MethodInfo) =>
    method.desc.input.fields
      .filter((f) => (f.name === "debug" || f.name === "enable_debug") && f.fieldKind === "scalar")
      .map((f) => f.localName);
  const flaggedBy = (flags: string[]) => (m: Message) => flags.some((f) => (m as Message & Record<string, unknown>)[f] === true);
  return staged(
    // One request message: its flags are there before the rest of the chain runs.
    (method) => {
      if (streamsRequests(method.kind)) return undefined;
      const flagged = flaggedBy(flagsOf(method));
      return {
        enter: ({ ctx, request }) => {
          if (firstValue(ctx.metadata, header) === "debug" || flagged(request)) ctx.setDebug(true);
        },
      };
    },
    (next, method) => {
      const flags = flagsOf(method);
      const flagged = flaggedBy(flags);
      return (call) => {
        const { ctx, requests } = call;
        if (firstValue(ctx.metadata, header) === "debug") ctx.setDebug(true);
        else if (!requests) {
          if (flagged(call.request)) ctx.setDebug(true);
        } else if (flags.length > 0) {
          requests.inspect((message, index) => {
            if (index === 0 && flagged(message)) ctx.setDebug(true);
          });
        }
        return next(call);
      };
    },
  );
}
