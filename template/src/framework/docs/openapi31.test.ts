import assert from "node:assert/strict";
import { describe, test } from "node:test";
import SwaggerParser from "@apidevtools/swagger-parser";
import type { DescService } from "@bufbuild/protobuf";
import { Ajv2020 } from "ajv/dist/2020.js";
import { FixtureService } from "../../../test/gen/fixture/v1/fixture_pb.js";
import { ContractService } from "../../../test/gen/openapitest/v1/contract_pb.js";
import { authRule } from "../auth/rules.js";
import { methodInfo } from "../call/method.js";
import { compileRoutes } from "../gateway/routes.js";
import type { BoundMethod } from "../server/methods.js";
import { buildOpenApi31, type OpenApi31Options } from "./openapi31.js";

type Json = Record<string, unknown>;
type Operation = Json & { parameters?: Json[]; requestBody?: Json; responses: Record<string, Json>; security?: Json[] };
type Doc = { paths: Record<string, Record<string, Operation>>; components: { schemas: Record<string, Json>; securitySchemes?: Json } };

function documentOf(service: DescService, options: Partial<OpenApi31Options> = {}): Doc {
  const methods: BoundMethod[] = service.methods.map((desc) => ({
    info: methodInfo(desc),
    invoke: () => Promise.reject(new Error("unused")),
  }));
  return buildOpenApi31(compileRoutes(methods), { title: "t", version: "1.0.0", services: [service], ...options }) as unknown as Doc;
}

/** Every component compiled as JSON Schema 2020-12 (meta-schema checked), to validate sample JSON against. */
function schemaValidator(doc: Doc) {
  const text = JSON.stringify(doc.components.schemas).replaceAll('"#/components/schemas/', '"#/$defs/');
  const ajv = new Ajv2020({ strict: false, allErrors: true, validateFormats: false });
  ajv.addSchema({ $id: "doc", $defs: JSON.parse(text) });
  return (name: string, value: unknown) => {
    const validate = ajv.getSchema(`doc#/$defs/${name}`)!;
    return validate(value) ? "valid" : JSON.stringify(validate.errors);
  };
}

const allAuth = { jwt: true, apiKey: true, oidcIssuer: "https://issuer.example.com/", rules: authRule, sse: true } as const;

describe("OpenAPI 3.1 document", () => {
  for (const [name, service] of [
    ["the sample API (the fixture service, a copy of it)", FixtureService],
    ["a proto using every mapping", ContractService],
  ] as const) {
    test(`${name}: swagger-parser accepts it as 3.1, and its schemas compile as JSON Schema 2020-12`, async () => {
      for (const options of [{}, allAuth]) {
        const doc = documentOf(service, options);
        assert.equal((doc as unknown as Json).openapi, "3.1.1");
        await SwaggerParser.validate(structuredClone(doc) as never);
        schemaValidator(doc);
      }
    });
  }

  const doc = documentOf(ContractService, allAuth);
  const item = doc.components.schemas["openapitest.v1.Item"] as Json & { properties: Record<string, Json>; allOf: Json[] };
  const check = schemaValidator(doc);
  const valid = { name: "shelves/a/items/b", title: "T", book: "b" };

  test("oneofs are oneOf: at most one member of a plain oneof, exactly one of a protovalidate-required one", () => {
    assert.equal(item.allOf.length, 2);
    assert.equal(check("openapitest.v1.Item", valid), "valid");
    assert.equal(check("openapitest.v1.Item", { ...valid, url: "u" }), "valid");
    assert.notEqual(check("openapitest.v1.Item", { ...valid, url: "u", original: valid }), "valid", "two members of one oneof");
    const { book: _b, ...noKind } = valid;
    assert.notEqual(check("openapitest.v1.Item", noKind), "valid", "the required oneof unset");
    assert.notEqual(check("openapitest.v1.Item", { ...valid, disc: 1 }), "valid");
    assert.ok(!("url" in item.properties), "oneof members are described in their variants only");
    assert.ok("note" in item.properties, "a proto3 optional field is a plain property");
  });

  test("required from field_behavior REQUIRED and protovalidate required; OUTPUT_ONLY/INPUT_ONLY as readOnly/writeOnly", () => {
    assert.deepEqual(item.required, ["name", "title"]);
    assert.notEqual(check("openapitest.v1.Item", { title: "T", book: "b" }), "valid");
    assert.equal(item.properties.createTime!.readOnly, true);
    assert.equal(item.properties.secret!.writeOnly, true);
  });

  test("protovalidate rules are JSON Schema keywords", () => {
    const p = item.properties;
    assert.deepEqual(p.name, { type: "string", minLength: 3, maxLength: 200, pattern: "^shelves/[^/]+/items/[^/]+$" });
    assert.deepEqual(p.rank, { type: "integer", format: "int32", exclusiveMinimum: 0, exclusiveMaximum: 100 });
    assert.deepEqual(p.price, { type: "number", format: "double", minimum: 0, maximum: 1e6 });
    assert.deepEqual(p.stars, { type: "integer", format: "int64", minimum: 0, enum: [1, 2, 3, 4, 5] });
    assert.deepEqual(p.tags, { type: "array", items: { type: "string", maxLength: 20 }, minItems: 1, maxItems: 5, uniqueItems: true });
    assert.deepEqual(p.colour, { $ref: "#/components/schemas/openapitest.v1.Colour", enum: ["COLOUR_RED", "COLOUR_GREEN"] });
    assert.equal(p.ownerEmail!.format, "email");
    assert.equal((p.counts as Json).maxProperties, 10);
    assert.notEqual(check("openapitest.v1.Item", { ...valid, tags: ["a", "a"] }), "valid", "uniqueItems");
    assert.notEqual(check("openapitest.v1.Item", { ...valid, rank: 100 }), "valid", "exclusiveMaximum");
    assert.notEqual(check("openapitest.v1.Item", { ...valid, colour: "COLOUR_BLUE" }), "valid", "enum `in`");
  });

  test("64-bit integers are strings with a format; enums are their names", () => {
    assert.deepEqual(item.properties.size, { type: "string", format: "int64" });
    assert.deepEqual(item.properties.views, { type: "string", format: "uint64" });
    assert.deepEqual(doc.components.schemas["openapitest.v1.Colour"]!.enum, [
      "COLOUR_UNSPECIFIED",
      "COLOUR_RED",
      "COLOUR_GREEN",
      "COLOUR_BLUE",
    ]);
  });

  test("streams: responses as NDJSON and server-sent events, requests as NDJSON; errors are google.rpc.Status", () => {
    const watch = doc.paths["/v1/{parent}/items:watch"]!.get!;
    const upload = doc.paths["/v1/items:upload"]!.post!;
    const sync = doc.paths["/v1/items:sync"]!.post!;
    assert.deepEqual(Object.keys(watch.responses["200"]!.content as Json), ["application/x-ndjson", "text/event-stream"]);
    assert.deepEqual(Object.keys(sync.responses["200"]!.content as Json), ["application/x-ndjson", "text/event-stream"]);
    assert.deepEqual(Object.keys(upload.responses["200"]!.content as Json), ["application/json"]);
    for (const op of [upload, sync]) assert.ok("application/x-ndjson" in (op.requestBody!.content as Json));
    for (const op of [watch, upload, sync]) {
      assert.deepEqual(op.responses.default!.content, {
        "application/json": { schema: { $ref: "#/components/schemas/google.rpc.Status" } },
      });
    }
    assert.deepEqual(
      ["server", "client", "bidi"],
      [watch, upload, sync].map((op) => op["x-stream"]),
    );
  });

  test("security per operation: public methods none, scopes listed, API keys only where no scope is needed, OIDC discovery", () => {
    assert.deepEqual(doc.components.securitySchemes, {
      BearerAuth: {
        type: "http",
        scheme: "bearer",
        bearerFormat: "JWT",
        description: (doc.components.securitySchemes as never)["BearerAuth"]["description"],
      },
      OpenIdConnect: {
        type: "openIdConnect",
        openIdConnectUrl: "https://issuer.example.com/.well-known/openid-configuration",
        description: (doc.components.securitySchemes as never)["OpenIdConnect"]["description"],
      },
      ApiKeyAuth: { type: "apiKey", in: "header", name: "x-api-key", description: "One of the service's API keys." },
    });
    assert.deepEqual(doc.paths["/v1/{name}"]!.get!.security, []);
    assert.deepEqual(doc.paths["/v1/{parent}/items"]!.post!.security, [
      { BearerAuth: ["items:write"] },
      { OpenIdConnect: ["items:write"] },
    ]);
    assert.deepEqual(doc.paths["/v1/{parent}/items:watch"]!.get!.security, [
      { BearerAuth: ["items:read"] },
      { OpenIdConnect: ["items:read"] },
    ]);
    const open = documentOf(FixtureService, { jwt: true, apiKey: true, rules: authRule });
    assert.deepEqual(open.paths["/api/v1/echo"]!.post!.security, [{ BearerAuth: [] }, { ApiKeyAuth: [] }]);
    assert.deepEqual(open.paths["/api/v1/countdown/{from}"]!.get!.security, []);
    assert.equal(documentOf(FixtureService).paths["/api/v1/echo"]!.post!.security, undefined, "auth off: no security");
  });

  test("path and query parameters carry their schemas", () => {
    const get = doc.paths["/v1/{name}"]!.get!;
    assert.deepEqual(get.parameters, [
      {
        name: "name",
        in: "path",
        required: true,
        description: get.parameters![0]!.description,
        schema: { type: "string", pattern: "^shelves/[^/]+/items/[^/]+$" },
      },
      {
        name: "colours",
        in: "query",
        required: false,
        schema: {
          type: "array",
          items: {
            type: "string",
            enum: ["COLOUR_UNSPECIFIED", "COLOUR_RED", "COLOUR_GREEN", "COLOUR_BLUE"],
            default: "COLOUR_UNSPECIFIED",
          },
        },
      },
    ]);
  });
});
