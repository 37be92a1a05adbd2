import { create, type DescMessage, type Message } from "@bufbuild/protobuf";
import { pathToString } from "@bufbuild/protobuf/reflect";
import { createValidator } from "@bufbuild/protovalidate";
import { BadRequestSchema } from "../../gen/google/rpc/error_details_pb.js";
import { SKIP, staged } from "../call/chain.js";
import { Code, GrpcError } from "../call/status.js";
import { type Interceptor, type MethodInfo, streamsRequests } from "../call/types.js";
import { compileFastAccept, hasValidationRules } from "./validate-accept.js";

export { hasValidationRules };

/**
 * buf.validate rules on the request: a violation answers INVALID_ARGUMENT with a
 * google.rpc.BadRequest detail that lists every violated field. In a client-streaming or bidi
 * call every message is checked as it arrives, and the first invalid one ends the call.
 * A request type with no rules anywhere in it is not checked at all (decided at start-up), and a message
 * that a predicate compiled from its type's rules finds certainly valid skips protovalidate: only a
 * message that may be invalid pays for it, and its answer is protovalidate's, unchanged.
 *
 * Each request type's validation plan and predicate are built ahead of its first call: at once, or by
 * `warmUp` when given (the app runs those tasks once it is ready, keeping the ~10 ms off its start-up). A
 * call that comes first has protovalidate build the plan itself and check the message, with the same result.
 */
export function validate(options: { warmUp?: (task: () => void) => void } = {}): Interceptor {
  const validator = createValidator();
  const warmUp = options.warmUp ?? ((task) => task());
  /** The check of one request type, or undefined when it has no rules anywhere in it (then nothing is checked). */
  const checkOf = (method: MethodInfo): ((message: Message) => void) | undefined => {
    const input = method.desc.input;
    if (!hasValidationRules(input)) return undefined;
    let accepts: ((message: Message) => boolean) | undefined;
    warmUp(() => {
      // A type whose rules protovalidate cannot compile answers every call with its error: no shortcut for it.
      if (validator.validate(input, create(input)).kind !== "error") accepts = compileFastAccept(input);
    });
    return (message) => {
      if (accepts?.(message)) return;
      const error = violation(validator, input, message);
      if (error) throw error;
    };
  };
  return staged(
    // One request message, checked before the rest of the chain runs.
    (method) => {
      if (streamsRequests(method.kind)) return undefined;
      const check = checkOf(method);
      return check ? { enter: (call) => check(call.request) } : SKIP;
    },
    // A stream of requests: each message as it arrives.
    (next, method) => {
      const check = checkOf(method);
      if (!check) return next;
      return (call) => {
        if (call.requests) call.requests.inspect(check);
        else check(call.request);
        return next(call);
      };
    },
  );
}

function violation(validator: ReturnType<typeof createValidator>, input: DescMessage, message: Message): GrpcError | undefined {
  const result = validator.validate(input, message);
  if (result.kind === "valid") return undefined;
  if (result.kind === "error") return new GrpcError(Code.INTERNAL, "request validation failed", { cause: result.error });
  const fieldViolations = result.violations.map((v) => ({ field: pathToString(v.field), description: v.message }));
  return new GrpcError(Code.INVALID_ARGUMENT, result.error.message, { details: [create(BadRequestSchema, { fieldViolations })] });
}
