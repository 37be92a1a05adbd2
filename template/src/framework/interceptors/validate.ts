import { create, type DescMessage, type Message } from "@bufbuild/protobuf";
import { pathToString } from "@bufbuild/protobuf/reflect";
import { createValidator } from "@bufbuild/protovalidate";
import { BadRequestSchema } from "../../gen/google/rpc/error_details_pb.js";
import { Code, GrpcError } from "../call/status.js";
import type { Interceptor } from "../call/types.js";
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
  return (next, method) => {
    const input = method.desc.input;
    // protovalidate would find nothing to check on every message of this type: skip the interceptor.
    if (!hasValidationRules(input)) return next;
    let accepts: ((message: Message) => boolean) | undefined;
    warmUp(() => {
      // A type whose rules protovalidate cannot compile answers every call with its error: no shortcut for it.
      if (validator.validate(input, create(input)).kind !== "error") accepts = compileFastAccept(input);
    });
    const check = (message: Message) => {
      if (accepts?.(message)) return;
      const error = violation(validator, input, message);
      if (error) throw error;
    };
    return (call) => {
      if (call.requests) {
        call.requests.inspect(check);
        return next(call);
      }
      if (accepts?.(call.request)) return next(call);
      const error = violation(validator, input, call.request);
      if (error) throw error;
      return next(call);
    };
  };
}

function violation(validator: ReturnType<typeof createValidator>, input: DescMessage, message: Message): GrpcError | undefined {
  const result = validator.validate(input, message);
  if (result.kind === "valid") return undefined;
  if (result.kind === "error") return new GrpcError(Code.INTERNAL, "request validation failed", { cause: result.error });
  const fieldViolations = result.violations.map((v) => ({ field: pathToString(v.field), description: v.message }));
  return new GrpcError(Code.INVALID_ARGUMENT, result.error.message, { details: [create(BadRequestSchema, { fieldViolations })] });
}
