import { create } from "@bufbuild/protobuf";
import { pathToString } from "@bufbuild/protobuf/reflect";
import { createValidator } from "@bufbuild/protovalidate";
import { BadRequestSchema } from "../../gen/google/rpc/error_details_pb.js";
import { Code, GrpcError } from "../call/status.js";
import type { Interceptor } from "../call/types.js";

/**
 * buf.validate rules on the request: a violation answers INVALID_ARGUMENT with a
 * google.rpc.BadRequest detail that lists every violated field.
 */
export function validate(): Interceptor {
  const validator = createValidator();
  return (next, method) => {
    const input = method.desc.input;
    // Builds the validation plan for this message type now rather than on the first call.
    validator.validate(input, create(input));
    return (call) => {
      const result = validator.validate(input, call.request);
      if (result.kind === "valid") return next(call);
      if (result.kind === "error") throw new GrpcError(Code.INTERNAL, "request validation failed", { cause: result.error });
      const fieldViolations = result.violations.map((v) => ({ field: pathToString(v.field), description: v.message }));
      throw new GrpcError(Code.INVALID_ARGUMENT, result.error.message, { details: [create(BadRequestSchema, { fieldViolations })] });
    };
  };
}
