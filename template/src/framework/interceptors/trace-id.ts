import { randomUUID as nodeRandomUUID } from "node:crypto";
import type { Message } from "@bufbuild/protobuf";
import { staged } from "../call/chain.js";
import type { CallContext } from "../call/context.js";
import { firstValue } from "../call/metadata-values.js";
import { type Interceptor, type MethodInfo, streamsRequests } from "../call/types.js";

// Bound once: the bundle reads a function imported from a CommonJS module through a getter on every use.
const randomUUID = nodeRandomUUID;

const MAX_TRACE_ID_LENGTH = 128;
const PRINTABLE_ASCII = /^[\x20-\x7e]+$/;
/** grpc-js's rule for a metadata key. */
const LEGAL_KEY = /^[0-9a-z_.-]+$/;

/** A trace ID is kept only if it is short printable ASCII; anything else could break log lines or headers. */
export function sanitizeTraceId(value: string | undefined): string | undefined {
  if (!value || value.length > MAX_TRACE_ID_LENGTH || !PRINTABLE_ASCII.test(value)) return undefined;
  return value;
}

/**
 * Trace ID: the request's `trace_id` field, else the trace header, else a new UUID.
 * It lands in every log line (`trace`) and goes back in the response header.
 * A client-streaming or bidi call starts with the header's (or a new) one, and takes the first
 * message's `trace_id` when it has one; the response header carries it if it has not gone out yet.
 */
export function traceId(headerName: string): Interceptor {
  const header = headerName.toLowerCase();
  // A key grpc-js refuses for a text value (HTTP allows more characters; `-bin` wants bytes) keeps the
  // metadata path, which throws on it as before.
  const lazy = LEGAL_KEY.test(header) && !header.endsWith("-bin");
  const fromRequestOf = (method: MethodInfo): ((m: Message) => string | undefined) | undefined => {
    // Whether the request type has a trace_id field is known once, at start-up.
    const field = method.desc.input.fields.find((f) => f.name === "trace_id" && f.fieldKind === "scalar");
    return field ? (m: Message) => (m as unknown as Record<string, unknown>)[field.localName] as string : undefined;
  };
  const sendBack = (ctx: CallContext, id: string) => {
    // The value is a UUID or sanitized (printable ASCII): valid metadata.
    if (lazy) ctx.setResponseTraceHeader(header, id);
    else ctx.responseHeader.set(header, id);
  };
  /** The call's ID: its request's own (when it has one), else the header's, else a new one. */
  const start = (ctx: CallContext, own: string | undefined) => {
    const id = own ?? sanitizeTraceId(firstValue(ctx.metadata, header) as string | undefined) ?? randomUUID();
    ctx.setTraceId(id);
    sendBack(ctx, id);
  };
  return staged(
    // One request message: its trace_id is there before the rest of the chain runs.
    (method) => {
      if (streamsRequests(method.kind)) return undefined;
      const fromRequest = fromRequestOf(method);
      return {
        enter: ({ ctx, request }) => start(ctx, fromRequest && sanitizeTraceId(fromRequest(request))),
      };
    },
    // A stream of requests: the header's (or a new) ID at once, the first message's own one when it comes.
    (next, method) => {
      const fromRequest = fromRequestOf(method);
      return (call) => {
        const { ctx, requests } = call;
        start(ctx, requests || !fromRequest ? undefined : sanitizeTraceId(fromRequest(call.request)));
        if (requests && fromRequest) {
          requests.inspect((message, index) => {
            if (index !== 0) return;
            const own = sanitizeTraceId(fromRequest(message));
            if (own === undefined) return;
            ctx.setTraceId(own);
            if (!ctx.headerSent) sendBack(ctx, own);
          });
        }
        return next(call);
      };
    },
  );
}
