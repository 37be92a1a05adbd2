import { create, type DescField, type DescMessage, hasOption, type Message } from "@bufbuild/protobuf";
import { pathToString } from "@bufbuild/protobuf/reflect";
import { createValidator } from "@bufbuild/protovalidate";
import { field as fieldRules, message as messageRules, oneof as oneofRules } from "@bufbuild/protovalidate/gen/buf/validate/validate_pb.js";
import { BadRequestSchema } from "../../gen/google/rpc/error_details_pb.js";
import { Code, GrpcError } from "../call/status.js";
import type { Interceptor } from "../call/types.js";

/**
 * buf.validate rules on the request: a violation answers INVALID_ARGUMENT with a
 * google.rpc.BadRequest detail that lists every violated field. In a client-streaming or bidi
 * call every message is checked as it arrives, and the first invalid one ends the call.
 * A request type with no rules anywhere in it is not checked at all (decided at start-up).
 *
 * Each request type's validation plan is built ahead of its first call: at once, or by `warmUp` when given
 * (the app runs those tasks once it is ready, keeping the ~10 ms off its start-up). A call that comes first
 * builds it itself, with the same result.
 */
export function validate(options: { warmUp?: (task: () => void) => void } = {}): Interceptor {
  const validator = createValidator();
  const warmUp = options.warmUp ?? ((task) => task());
  return (next, method) => {
    const input = method.desc.input;
    // protovalidate would find nothing to check on every message of this type: skip the interceptor.
    if (!hasValidationRules(input)) return next;
    warmUp(() => validator.validate(input, create(input)));
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

/**
 * Whether protovalidate has anything to check on a message of this type: a buf.validate option on the
 * message, one of its oneofs or fields, or on any message type it holds (a field, list item or map value),
 * however deep. Without one its plan is empty (this service's validator does not enforce proto2's
 * `required`, which would need no option), and every message of the type is valid.
 */
export function hasValidationRules(desc: DescMessage, seen = new Set<DescMessage>()): boolean {
  if (seen.has(desc)) return false; // a recursive type: this one is being looked at already
  seen.add(desc);
  if (hasOption(desc, messageRules) || desc.oneofs.some((o) => hasOption(o, oneofRules))) return true;
  for (const field of desc.fields) {
    if (hasOption(field, fieldRules)) return true;
    const held = heldMessage(field);
    if (held !== undefined && hasValidationRules(held, seen)) return true;
  }
  return false;
}

function heldMessage(field: DescField): DescMessage | undefined {
  switch (field.fieldKind) {
    case "message":
      return field.message;
    case "list":
      return field.listKind === "message" ? field.message : undefined;
    case "map":
      return field.mapKind === "message" ? field.message : undefined;
    default:
      return undefined;
  }
}

function violation(validator: ReturnType<typeof createValidator>, input: DescMessage, message: Message): GrpcError | undefined {
  const result = validator.validate(input, message);
  if (result.kind === "valid") return undefined;
  if (result.kind === "error") return new GrpcError(Code.INTERNAL, "request validation failed", { cause: result.error });
  const fieldViolations = result.violations.map((v) => ({ field: pathToString(v.field), description: v.message }));
  return new GrpcError(Code.INVALID_ARGUMENT, result.error.message, { details: [create(BadRequestSchema, { fieldViolations })] });
}
