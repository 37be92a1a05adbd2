import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { create, fromJson, type JsonValue, type Message } from "@bufbuild/protobuf";
import {
  ChatRequestSchema,
  type CountdownRequest,
  type EchoRequest,
  EchoRequestSchema,
  FixtureService,
} from "../../../test/gen/fixture/v1/fixture_pb.js";
import { methodInfo } from "../call/method.js";
import { Code, GrpcError } from "../call/status.js";
import type { BoundMethod } from "../server/methods.js";
import { parsePathTemplate } from "./path-template.js";
import { decodeRequest, streamMessageDecoder } from "./request.js";
import { Router } from "./router.js";
import { compileRoutes, type GatewayRoute } from "./routes.js";

const bound: BoundMethod[] = FixtureService.methods.map((desc) => ({
  info: methodInfo(desc),
  invoke: async () => {
    throw new Error("not invoked in these tests");
  },
}));
const routes = compileRoutes(bound);
const router = new Router<GatewayRoute>();
for (const r of routes) router.add(r.httpMethod, r.template, r);

function routeFor(httpMethod: string, source: string): GatewayRoute {
  const route = routes.find((r) => r.httpMethod === httpMethod && r.template.source === source);
  assert.ok(route, `no route ${httpMethod} ${source}`);
  return route;
}

/** Matches and decodes a request as the gateway does: path through the router, then the decoder. */
function decode(method: string, url: string, body?: string): Message {
  const q = url.indexOf("?");
  const match = router.match(method, q === -1 ? url : url.slice(0, q));
  assert.equal(match.kind, "found", `${method} ${url} did not match: ${match.kind}`);
  if (match.kind !== "found") throw new Error("unreachable");
  return decodeRequest(match.route, match.segments, q === -1 ? "" : url.slice(q + 1), body);
}

const echo = (method: string, url: string, body?: string) => decode(method, url, body) as EchoRequest;

function assertInvalidArgument(fn: () => unknown, message: RegExp): void {
  assert.throws(fn, (err: unknown) => {
    assert.ok(err instanceof GrpcError, `expected GrpcError, got ${String(err)}`);
    assert.equal(err.code, Code.INVALID_ARGUMENT);
    assert.match(err.message, message);
    return true;
  });
}

describe("compileRoutes on FixtureService", () => {
  test("every http rule and additional binding becomes a route", () => {
    const summary = routes.map((r) => `${r.httpMethod} ${r.template.source} body=${r.body}`).sort();
    // The template's own methods, in order; a service that added methods has more routes besides.
    const known = new Set([
      "GET /api/v1/countdown/{from} body=",
      "GET /api/v1/echo/{message} body=",
      "POST /api/v1/chat body=*",
      "POST /api/v1/countdown body=*",
      "POST /api/v1/echo body=*",
      "POST /api/v1/fail body=*",
      "POST /api/v1/sum body=*",
    ]);
    assert.deepEqual(
      summary.filter((s) => known.has(s)),
      [...known],
    );
  });
});

describe("decodeRequest", () => {
  describe('body "*"', () => {
    test("the JSON body fills the whole message", () => {
      const req = echo("POST", "/api/v1/echo", '{"message":"hi","delayMs":5,"debug":true,"traceId":"t-1"}');
      assert.equal(req.$typeName, "fixture.v1.EchoRequest");
      assert.equal(req.message, "hi");
      assert.equal(req.delayMs, 5);
      assert.equal(req.debug, true);
      assert.equal(req.traceId, "t-1");
    });

    test("proto field names are accepted in the body as well as JSON names", () => {
      const req = echo("POST", "/api/v1/echo", '{"message":"hi","delay_ms":7,"trace_id":"t-2"}');
      assert.equal(req.delayMs, 7);
      assert.equal(req.traceId, "t-2");
    });

    test("an empty body gives the default message", () => {
      for (const body of [undefined, "", "  \n"]) {
        const req = echo("POST", "/api/v1/echo", body);
        assert.equal(req.message, "");
        assert.equal(req.delayMs, 0);
      }
    });

    test("malformed JSON is INVALID_ARGUMENT", () => {
      assertInvalidArgument(() => echo("POST", "/api/v1/echo", '{"message":'), /JSON/);
    });

    test("a JSON value of the wrong type is INVALID_ARGUMENT naming the field", () => {
      assertInvalidArgument(() => echo("POST", "/api/v1/echo", '{"delayMs":"soon"}'), /delay_ms/);
    });

    test("a JSON array instead of an object is INVALID_ARGUMENT", () => {
      assertInvalidArgument(() => echo("POST", "/api/v1/echo", "[1]"), /EchoRequest/);
    });

    test("each body gives the message, or the error code and text, that JSON.parse and protobuf-es give", () => {
      // The decoding before the compiled reader, kept as the reference (bodyJson + decodeBody).
      const before = (body: string): Message | GrpcError => {
        if (body.trim() === "") return create(EchoRequestSchema);
        let json: JsonValue;
        try {
          json = JSON.parse(body) as JsonValue;
        } catch (err) {
          return new GrpcError(Code.INVALID_ARGUMENT, `malformed JSON body: ${(err as Error).message}`);
        }
        try {
          return fromJson(EchoRequestSchema, json, { ignoreUnknownFields: true });
        } catch (err) {
          return new GrpcError(Code.INVALID_ARGUMENT, (err as Error).message);
        }
      };
      const bodies = [
        '{"message":"hi","traceId":"t","debug":false,"delayMs":30}',
        '{"message":"hi","delay_ms":30001}',
        '{"message":"hi"}',
        "{}",
        '{"message":"hi","traceId":"a","trace_id":"b"}',
        '{"message":"a","message":"b"}',
        '{"__proto__":{"message":"x"},"message":"y"}',
        '{"message":"\\ud800"}',
        '{"message":1}',
        '{"delayMs":-1}',
        '{"delayMs":4294967296}',
        '{"delayMs":1.5}',
        '{"delayMs":"12"}',
        '{"debug":"true"}',
        '{"debug":null,"message":null}',
        '{"message":"hi"',
        '{"message":"hi"} x',
        "[]",
        "null",
        '"text"',
        // 100 levels, the most accepted (deeper is refused before parsing: test/framework/deep-json.test.ts)
        `{"message":${"[".repeat(99)}${"]".repeat(99)}}`,
      ];
      for (const body of bodies) {
        const expected = before(body);
        let actual: Message | GrpcError;
        try {
          actual = echo("POST", "/api/v1/echo", body);
        } catch (err) {
          actual = err as GrpcError;
        }
        if (expected instanceof GrpcError) {
          assert.ok(actual instanceof GrpcError, body.slice(0, 60));
          assert.equal(actual.code, expected.code, body.slice(0, 60));
          assert.equal(actual.message, expected.message, body.slice(0, 60));
        } else assert.deepStrictEqual(actual, expected, body.slice(0, 60));
      }
    });

    test("each message of a request stream gives the message, or the error text, that JSON.parse and protobuf-es give", () => {
      const route = routeFor("POST", "/api/v1/chat");
      const decode = streamMessageDecoder(route, [], "");
      const before = (text: string, index: number): Message | GrpcError => {
        try {
          return fromJson(ChatRequestSchema, JSON.parse(text) as JsonValue, { ignoreUnknownFields: true });
        } catch (err) {
          const problem = err instanceof SyntaxError ? `malformed JSON: ${err.message}` : (err as Error).message;
          return new GrpcError(Code.INVALID_ARGUMENT, `request message ${index + 1}: ${problem}`);
        }
      };
      const texts = [
        '{"text":"hi"}',
        '{"text":"hi","trace_id":"t"}',
        "{}",
        '{"text":1}',
        '{"text":"a","text":"b"}',
        '{"text":"\\u0041"}',
        '{"text":',
        "[]",
      ];
      texts.forEach((text, index) => {
        const expected = before(text, index);
        let actual: Message | GrpcError;
        try {
          actual = decode(text, index);
        } catch (err) {
          actual = err as GrpcError;
        }
        if (expected instanceof GrpcError) {
          assert.ok(actual instanceof GrpcError, text);
          assert.equal(actual.code, expected.code, text);
          assert.equal(actual.message, expected.message, text);
        } else assert.deepStrictEqual(actual, expected, text);
      });
    });

    test("unknown JSON fields are ignored", () => {
      const req = echo("POST", "/api/v1/echo", '{"message":"hi","noSuchField":{"x":1},"another":[1,2]}');
      assert.equal(req.message, "hi");
    });

    test("the query string is ignored when the body takes every field", () => {
      const req = echo("POST", "/api/v1/echo?delayMs=9&message=fromquery", '{"message":"hi"}');
      assert.equal(req.message, "hi");
      assert.equal(req.delayMs, 0);
    });

    test("a path variable wins over the same field in the body", () => {
      // FixtureService has no rule with both a path variable and a body, so the GET
      // binding is given body "*" here to exercise the precedence.
      const get = routeFor("GET", "/api/v1/echo/{message}");
      const withBody: GatewayRoute = { ...get, body: "*" };
      const req = decodeRequest(withBody, ["api", "v1", "echo", "from-path"], "", '{"message":"from-body","delayMs":3}') as EchoRequest;
      assert.equal(req.message, "from-path");
      assert.equal(req.delayMs, 3);
    });
  });

  describe("path variables", () => {
    test("a single-segment variable is fully percent-decoded, %2F included", () => {
      const req = echo("GET", "/api/v1/echo/a%2Fb%20c%3Ad%E2%9C%93");
      assert.equal(req.message, "a/b c:d✓");
    });

    test("+ in a path segment stays a plus sign", () => {
      assert.equal(echo("GET", "/api/v1/echo/a+b").message, "a+b");
    });

    test("a numeric path variable is parsed into the number field", () => {
      const req = decode("GET", "/api/v1/countdown/12") as CountdownRequest;
      assert.equal(req.from, 12);
    });

    test("a non-numeric value for a numeric path variable is rejected naming the field", () => {
      assert.throws(() => decode("GET", "/api/v1/countdown/twelve"), /from/);
    });

    test("a path value wins over the same field in the query", () => {
      assert.equal(echo("GET", "/api/v1/echo/from-path?message=from-query").message, "from-path");
    });

    test("a multi-segment variable keeps %2F and decodes everything else", () => {
      const get = routeFor("GET", "/api/v1/echo/{message}");
      const field = get.pathFields[0]!.fields;
      const multi: GatewayRoute = {
        ...get,
        template: parsePathTemplate("/api/v1/echo/{message=**}"),
        pathFields: [{ fields: field, start: 3, end: undefined }],
      };
      const req = decodeRequest(multi, ["api", "v1", "echo", "a%2Fb", "c%20d"], "", undefined) as EchoRequest;
      assert.equal(req.message, "a%2Fb/c d");
    });

    test("a variable over several fixed segments keeps %2F too", () => {
      const get = routeFor("GET", "/api/v1/echo/{message}");
      const field = get.pathFields[0]!.fields;
      const shelves: GatewayRoute = {
        ...get,
        template: parsePathTemplate("/api/v1/echo/{message=shelves/*}"),
        pathFields: [{ fields: field, start: 3, end: 5 }],
      };
      const req = decodeRequest(shelves, ["api", "v1", "echo", "shelves", "x%2Fy%21"], "", undefined) as EchoRequest;
      assert.equal(req.message, "shelves/x%2Fy!");
    });
  });

  describe("query parameters", () => {
    test("a JSON name sets the field", () => {
      assert.equal(echo("GET", "/api/v1/echo/hi?delayMs=5").delayMs, 5);
    });

    test("a proto name sets the field", () => {
      const req = echo("GET", "/api/v1/echo/hi?delay_ms=5&trace_id=abc");
      assert.equal(req.delayMs, 5);
      assert.equal(req.traceId, "abc");
    });

    test("a bool accepts true", () => {
      assert.equal(echo("GET", "/api/v1/echo/hi?debug=true").debug, true);
      assert.equal(echo("GET", "/api/v1/echo/hi?debug=false").debug, false);
    });

    test("a bad bool is INVALID_ARGUMENT naming the field and the value", () => {
      assertInvalidArgument(() => echo("GET", "/api/v1/echo/hi?debug=yes"), /"debug".*"yes"/);
    });

    test("a bad number is rejected naming the field", () => {
      assert.throws(() => echo("GET", "/api/v1/echo/hi?delayMs=abc"), /delay_ms/);
      assert.throws(() => echo("GET", "/api/v1/echo/hi?delayMs=-1"), /delay_ms/);
      assert.throws(() => echo("GET", "/api/v1/echo/hi?delayMs=1.5"), /delay_ms/);
    });

    test("a repeated key for a singular field is INVALID_ARGUMENT", () => {
      assertInvalidArgument(() => echo("GET", "/api/v1/echo/hi?delayMs=1&delayMs=2"), /"delayMs" has too many values/);
    });

    test("unknown query keys are ignored", () => {
      const req = echo("GET", "/api/v1/echo/hi?utm_source=x&delayMs=2");
      assert.equal(req.message, "hi");
      assert.equal(req.delayMs, 2);
    });

    test("query values are form-decoded", () => {
      assert.equal(echo("GET", "/api/v1/echo/hi?trace_id=a%20b+c").traceId, "a b c");
    });
  });
});
