import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { create, type DescMethod, setExtension } from "@bufbuild/protobuf";
import { MethodOptionsSchema } from "@bufbuild/protobuf/wkt";
import { FixtureService } from "../../../test/gen/fixture/v1/fixture_pb.js";
import { http } from "../../gen/google/api/annotations_pb.js";
import { HttpRuleSchema } from "../../gen/google/api/http_pb.js";
import { methodInfo } from "../call/method.js";
import type { BoundMethod } from "../server/methods.js";
import { compileRoutes, RouteError } from "./routes.js";

/** FixtureService.Echo with its google.api.http rule replaced by `get: <path>`. */
function echoAt(path: string): BoundMethod {
  const desc = FixtureService.method.echo;
  const options = create(MethodOptionsSchema);
  setExtension(options, http, create(HttpRuleSchema, { pattern: { case: "get", value: path } }));
  const withRule = { ...desc, proto: { ...desc.proto, options } } as DescMethod;
  return {
    info: { ...methodInfo(desc), desc: withRule },
    invoke: async () => {
      throw new Error("not invoked");
    },
  };
}

describe("malformed path templates stop the start-up with an error naming the method", () => {
  for (const [shape, path] of [
    ['a second "=" inside a variable', "/api/v1/echo/{message=a=b}"],
    ['"*" inside a literal', "/api/v1/ec*ho/{message}"],
    ['"*" inside a literal of a variable', "/api/v1/echo/{message=a*}"],
    ["a verb that is not a literal", "/api/v1/echo/{message}:{"],
    ["a verb with a wildcard", "/api/v1/echo/{message}:*"],
    ["a field bound twice", "/api/v1/echo/{message}/{message}"],
    ['a "?" in a literal', "/api/v1/echo?x/{message}"],
    ["a control character in a literal", "/api/v1/ec\u0001ho/{message}"],
  ]) {
    test(shape, () => {
      assert.throws(
        () => compileRoutes([echoAt(path!)]),
        (err: unknown) => err instanceof RouteError && err.message.startsWith("/fixture.v1.FixtureService/Echo google.api.http: "),
      );
    });
  }

  test("a well-formed one compiles", () => {
    assert.equal(compileRoutes([echoAt("/api/v1/echo/{message}:say")])[0]?.template.verb, "say");
  });
});
