import { create, type DescMessage, type Message } from "@bufbuild/protobuf";
import { pathToString } from "@bufbuild/protobuf/reflect";
import { createValidator } from "@bufbuild/protovalidate";
import { BadRequestSchema } from "../../gen/google/rpc/error_details_pb.js";
import { Code, GrpcError } from "../call/status.js";
import type { Interceptor } from "../call/types.js";

/**
 * buf.validate rules on the request: a violation answers INVALID_ARGUMENT with a
 * google.rpc.BadRequest detail that lists every violated field. In a client-streaming or bidi
 * call every message is checked as it arrives, and the first invalid one ends the call.
 */
export function validate(): Interceptor {
  const validator = createValidator();
  return (next, method) => {
    const input = method.desc.input;
    // Builds the validation plan for this message type now rather than on the first call.
    validator.validate(input, create(input));
    const check = (message: Message) => {
      const error = violation(validator, input, message);
      if (error) throw error;
    };
    return (call) => {
      if (call.requests) {
        call.requests.inspect(check);
        return next(call);
      }
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
