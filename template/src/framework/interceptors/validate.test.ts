import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { create, createFileRegistry, type DescMessage, type Message, setExtension } from "@bufbuild/protobuf";
import {
  FieldOptionsSchema,
  FileDescriptorProtoSchema,
  FieldDescriptorProto_Label as Label,
  MessageOptionsSchema,
  OneofOptionsSchema,
  FieldDescriptorProto_Type as Type,
} from "@bufbuild/protobuf/wkt";
import { createValidator } from "@bufbuild/protovalidate";
import {
  FieldRulesSchema,
  field as fieldRules,
  MessageRulesSchema,
  message as messageRules,
  OneofRulesSchema,
  oneof as oneofRules,
} from "@bufbuild/protovalidate/gen/buf/validate/validate_pb.js";
import { Metadata } from "@grpc/grpc-js";
import { FixtureService } from "../../../test/gen/fixture/v1/fixture_pb.js";
import { CallContext } from "../call/context.js";
import { methodInfo } from "../call/method.js";
import { Code, GrpcError } from "../call/status.js";
import type { Next } from "../call/types.js";
import { hasValidationRules, validate } from "./validate.js";

const minLen1 = () => {
  const options = create(FieldOptionsSchema);
  setExtension(options, fieldRules, create(FieldRulesSchema, { type: { case: "string", value: { minLen: 1n } } }));
  return options;
};
const required = () => {
  const options = create(OneofOptionsSchema);
  setExtension(options, oneofRules, create(OneofRulesSchema, { required: true }));
  return options;
};
const celRule = () => {
  const options = create(MessageOptionsSchema);
  setExtension(options, messageRules, create(MessageRulesSchema, { cel: [{ id: "never", expression: "false", message: "never" }] }));
  return options;
};
const scalar = (name: string, number: number, type: Type, extra: object = {}) => ({ name, number, type, label: Label.OPTIONAL, ...extra });
const ref = (name: string, number: number, typeName: string, label = Label.OPTIONAL) => ({
  name,
  number,
  type: Type.MESSAGE,
  typeName: `.t.${typeName}`,
  label,
});

/** Message types with rules in every place protovalidate looks, and types without any, built as protoc would describe them. */
const registry = createFileRegistry(
  create(FileDescriptorProtoSchema, {
    name: "t.proto",
    package: "t",
    syntax: "proto3",
    messageType: [
      { name: "Plain", field: [scalar("v", 1, Type.INT64), scalar("s", 2, Type.STRING), ref("self", 3, "Plain")] },
      { name: "Ruled", field: [scalar("name", 1, Type.STRING, { options: minLen1() })] },
      { name: "HoldsRuled", field: [ref("inner", 1, "Ruled")] },
      { name: "ListOfRuled", field: [ref("items", 1, "Ruled", Label.REPEATED)] },
      {
        name: "MapOfRuled",
        field: [ref("by_key", 1, "MapOfRuled.ByKeyEntry", Label.REPEATED)],
        nestedType: [{ name: "ByKeyEntry", options: { mapEntry: true }, field: [scalar("key", 1, Type.STRING), ref("value", 2, "Ruled")] }],
      },
      { name: "DeepRuled", field: [ref("holds", 1, "HoldsRuled"), ref("self", 2, "DeepRuled")] },
      {
        name: "RequiredOneof",
        oneofDecl: [{ name: "choice", options: required() }],
        field: [scalar("a", 1, Type.STRING, { oneofIndex: 0 }), scalar("b", 2, Type.INT32, { oneofIndex: 0 })],
      },
      { name: "MessageRule", options: celRule(), field: [scalar("v", 1, Type.INT64)] },
    ],
  }),
  () => undefined,
);
const type = (name: string) => registry.getMessage(`t.${name}`) as DescMessage;

describe("validation rules of a request type, found at start-up", () => {
  test("a type with no buf.validate option anywhere in it (itself recursive) has none, and protovalidate finds every message of it valid", () => {
    const plain = type("Plain");
    assert.equal(hasValidationRules(plain), false);
    const validator = createValidator();
    for (const init of [{}, { v: -1n, s: "" }, { self: { self: { v: 3n } } }]) {
      assert.equal(validator.validate(plain, create(plain, init as never)).kind, "valid");
    }
    assert.equal(hasValidationRules(FixtureService.method.sum.input), false, "SumRequest");
  });

  test("a rule on a field, a oneof, the message, or on a type held in a field, list or map (however deep) counts", () => {
    for (const name of ["Ruled", "HoldsRuled", "ListOfRuled", "MapOfRuled", "DeepRuled", "RequiredOneof", "MessageRule"]) {
      assert.equal(hasValidationRules(type(name)), true, name);
    }
    assert.equal(hasValidationRules(FixtureService.method.echo.input), true, "EchoRequest");
    assert.equal(hasValidationRules(FixtureService.method.chat.input), true, "ChatRequest");
  });

  test("the interceptor leaves a method whose request has no rules alone, and still refuses a nested invalid message", async () => {
    const answered: Next = async () => ({ message: create(type("Plain")) });
    const sum = methodInfo(FixtureService.method.sum);
    assert.equal(validate()(answered, sum), answered, "no step of its own for SumRequest");

    // A method whose request type holds a ruled type: the nested message is checked.
    const holds = { ...methodInfo(FixtureService.method.echo), desc: { ...FixtureService.method.echo, input: type("DeepRuled") } };
    const step = validate()(answered, holds as never);
    assert.notEqual(step, answered);
    const call = (request: Message) => ({
      method: holds as never,
      ctx: new CallContext({ method: holds as never, transport: "grpc", metadata: new Metadata(), deadline: Number.POSITIVE_INFINITY }),
      request,
    });
    const invalid = create(type("DeepRuled"), { holds: { inner: { name: "" } } } as never);
    await assert.rejects(
      async () => step(call(invalid)),
      (err: unknown) => err instanceof GrpcError && err.code === Code.INVALID_ARGUMENT,
    );
    const valid = create(type("DeepRuled"), { holds: { inner: { name: "x" } } } as never);
    await step(call(valid));
  });

  test("a first call before the after-ready warm-up has run is refused with the same violations as one after it", async () => {
    const answered: Next = async () => ({ message: create(type("Plain")) });
    const holds = { ...methodInfo(FixtureService.method.echo), desc: { ...FixtureService.method.echo, input: type("DeepRuled") } };
    const queued: (() => void)[] = [];
    const deferred = validate({ warmUp: (task) => queued.push(task) })(answered, holds as never);
    const warm = validate()(answered, holds as never);
    assert.equal(queued.length, 1, "the plan is left to the warm-up");
    const call = (request: Message) => ({
      method: holds as never,
      ctx: new CallContext({ method: holds as never, transport: "grpc", metadata: new Metadata(), deadline: Number.POSITIVE_INFINITY }),
      request,
    });
    const invalid = () => create(type("DeepRuled"), { holds: { inner: { name: "" } } } as never);
    const refusal = async (step: Next) => {
      const err = await Promise.resolve()
        .then(() => step(call(invalid())))
        .then(
          () => assert.fail("accepted an invalid message"),
          (e: unknown) => e,
        );
      assert.ok(err instanceof GrpcError && err.code === Code.INVALID_ARGUMENT, String(err));
      return { message: err.message, details: JSON.stringify(err.details, (_k, v) => (typeof v === "bigint" ? String(v) : v)) };
    };
    const first = await refusal(deferred);
    assert.deepEqual(first, await refusal(warm));
    queued[0]!();
    assert.deepEqual(await refusal(deferred), first, "and the same once the warm-up has run");
    await deferred(call(create(type("DeepRuled"), { holds: { inner: { name: "x" } } } as never)));
  });
});
