import assert from "node:assert/strict";
import { describe, test } from "node:test";
import SwaggerParser from "@apidevtools/swagger-parser";
import { create, createFileRegistry, type DescService, type MessageInitShape, setExtension } from "@bufbuild/protobuf";
import {
  FileDescriptorProtoSchema,
  file_google_protobuf_any,
  file_google_protobuf_duration,
  file_google_protobuf_empty,
  file_google_protobuf_field_mask,
  file_google_protobuf_struct,
  file_google_protobuf_timestamp,
  file_google_protobuf_wrappers,
  FieldDescriptorProto_Label as Label,
  MethodOptionsSchema,
  FieldDescriptorProto_Type as Type,
} from "@bufbuild/protobuf/wkt";
import { FixtureService } from "../../../test/gen/fixture/v1/fixture_pb.js";
import { StreamService } from "../../../test/gen/gatewaytest/v1/streams_pb.js";
import { http } from "../../gen/google/api/annotations_pb.js";
import { HttpRuleSchema } from "../../gen/google/api/http_pb.js";
import { methodInfo } from "../call/method.js";
import { compileRoutes } from "../gateway/routes.js";
import type { BoundMethod } from "../server/methods.js";
import { buildOpenApi, documentStem, type OpenApiOptions } from "./openapi.js";

type Json = Record<string, unknown>;

/** A test-only API in the shape of a real one (AIP resources), built as a descriptor without protoc. */
function shopService(): DescService {
  const camel = (name: string) => name.replace(/_([a-z0-9])/g, (_m, c: string) => c.toUpperCase());
  const f = (
    name: string,
    number: number,
    type: Type,
    extra: { typeName?: string; repeated?: boolean; oneofIndex?: number; proto3Optional?: boolean } = {},
  ) => ({
    name,
    number,
    type,
    jsonName: camel(name),
    label: extra.repeated ? Label.REPEATED : Label.OPTIONAL,
    ...(extra.typeName ? { typeName: extra.typeName } : {}),
    ...(extra.oneofIndex !== undefined ? { oneofIndex: extra.oneofIndex } : {}),
    proto3Optional: extra.proto3Optional ?? false,
  });
  const msg = (typeName: string) => ({ typeName, type: Type.MESSAGE });
  const mapEntry = (name: string, key: Type, value: { type: Type; typeName?: string }) => ({
    name,
    field: [f("key", 1, key), f("value", 2, value.type, { typeName: value.typeName })],
    options: { mapEntry: true },
  });
  const map = (name: string, number: number, entry: string) => f(name, number, Type.MESSAGE, { typeName: entry, repeated: true });
  const wkt = (name: string, number: number, type: string) => f(name, number, Type.MESSAGE, { typeName: `.google.protobuf.${type}` });

  const file = create(FileDescriptorProtoSchema, {
    name: "shop/v1/shop.proto",
    package: "shop.v1",
    syntax: "proto3",
    dependency: [
      "google/protobuf/any.proto",
      "google/protobuf/duration.proto",
      "google/protobuf/empty.proto",
      "google/protobuf/field_mask.proto",
      "google/protobuf/struct.proto",
      "google/protobuf/timestamp.proto",
      "google/protobuf/wrappers.proto",
    ],
    enumType: [
      {
        name: "Genre",
        value: [
          { name: "GENRE_UNSPECIFIED", number: 0 },
          { name: "GENRE_FICTION", number: 1 },
          { name: "GENRE_POETRY", number: 2 },
        ],
      },
    ],
    messageType: [
      {
        name: "Book",
        field: [
          f("name", 1, Type.STRING),
          f("title", 2, Type.STRING),
          f("page_count", 3, Type.INT64),
          f("isbn", 4, Type.UINT64),
          f("genre", 5, Type.ENUM, { typeName: ".shop.v1.Genre" }),
          f("tags", 6, Type.STRING, { repeated: true }),
          map("ratings", 7, ".shop.v1.Book.RatingsEntry"),
          f("cover", 8, Type.BYTES),
          wkt("published_at", 9, "Timestamp"),
          wkt("read_time", 10, "Duration"),
          wkt("copies", 11, "Int64Value"),
          wkt("metadata", 12, "Struct"),
          wkt("extra", 13, "Value"),
          wkt("attachment", 14, "Any"),
          f("url", 15, Type.STRING, { oneofIndex: 0 }),
          f("original", 16, Type.MESSAGE, { typeName: ".shop.v1.Book", oneofIndex: 0 }),
          f("related", 17, Type.MESSAGE, { typeName: ".shop.v1.Book", repeated: true }),
          map("by_year", 18, ".shop.v1.Book.ByYearEntry"),
          f("price", 19, Type.DOUBLE),
          f("weight", 20, Type.FLOAT),
          f("available", 21, Type.BOOL),
          f("delta", 22, Type.SINT32),
          f("serial", 23, Type.FIXED64),
          wkt("in_print", 24, "BoolValue"),
          wkt("shelf_marks", 25, "ListValue"),
          wkt("nothing", 26, "Empty"),
          f("author", 27, Type.MESSAGE, msg(".shop.v1.Author")),
          f("first_edition", 28, Type.STRING, { oneofIndex: 1, proto3Optional: true }),
        ],
        nestedType: [
          mapEntry("RatingsEntry", Type.STRING, { type: Type.INT32 }),
          mapEntry("ByYearEntry", Type.INT64, { type: Type.ENUM, typeName: ".shop.v1.Genre" }),
        ],
        oneofDecl: [{ name: "source" }, { name: "_first_edition" }],
      },
      { name: "Author", field: [f("display_name", 1, Type.STRING), f("favourite", 2, Type.MESSAGE, msg(".shop.v1.Book"))] },
      {
        name: "GetBookRequest",
        field: [
          f("name", 1, Type.STRING),
          wkt("read_mask", 2, "FieldMask"),
          f("genres", 3, Type.ENUM, { typeName: ".shop.v1.Genre", repeated: true }),
          f("author", 4, Type.MESSAGE, msg(".shop.v1.Author")),
          map("filters", 5, ".shop.v1.GetBookRequest.FiltersEntry"),
          f("min_pages", 6, Type.INT64),
          wkt("since", 7, "Timestamp"),
        ],
        nestedType: [mapEntry("FiltersEntry", Type.STRING, { type: Type.STRING })],
      },
      { name: "UpdateBookRequest", field: [f("book", 1, Type.MESSAGE, msg(".shop.v1.Book")), wkt("update_mask", 2, "FieldMask")] },
      {
        name: "ListBooksRequest",
        field: [f("parent", 1, Type.STRING), f("page_size", 2, Type.INT32), f("genre", 3, Type.ENUM, { typeName: ".shop.v1.Genre" })],
      },
      {
        name: "ListBooksResponse",
        field: [f("books", 1, Type.MESSAGE, { typeName: ".shop.v1.Book", repeated: true }), f("next_page_token", 2, Type.STRING)],
      },
    ],
    service: [
      {
        name: "Shop",
        method: [
          method("GetBook", "GetBookRequest", "Book", { pattern: { case: "get", value: "/v1/{name=shelves/*/books/*}" } }),
          method("UpdateBook", "UpdateBookRequest", "Book", {
            pattern: { case: "patch", value: "/v1/{book.name=shelves/*/books/*}" },
            body: "book",
          }),
          method("ListBooks", "ListBooksRequest", "ListBooksResponse", {
            pattern: { case: "get", value: "/v1/{parent=shelves/*}/books" },
            responseBody: "books",
            additionalBindings: [create(HttpRuleSchema, { pattern: { case: "get", value: "/v1/books" } })],
          }),
          method("PublishBook", "GetBookRequest", "Book", {
            pattern: { case: "post", value: "/v1/{name=shelves/*/books/*}:publish" },
            body: "*",
          }),
          method("WatchBooks", "ListBooksRequest", "Book", { pattern: { case: "get", value: "/v1/{parent=shelves/*}/books:watch" } }, true),
          method("GetAuthorBook", "GetBookRequest", "Book", { pattern: { case: "get", value: "/v1/{name=authors/*/books/*}" } }),
          method("Purge", "ListBooksRequest", "Book", { pattern: { case: "custom", value: { kind: "PURGE", path: "/v1/books" } } }),
          method("SetGenre", "ListBooksRequest", "Book", {
            pattern: { case: "put", value: "/v1/{parent=shelves/*}/genre" },
            body: "genre",
          }),
        ],
      },
    ],
  });
  const deps = [
    file_google_protobuf_any,
    file_google_protobuf_duration,
    file_google_protobuf_empty,
    file_google_protobuf_field_mask,
    file_google_protobuf_struct,
    file_google_protobuf_timestamp,
    file_google_protobuf_wrappers,
  ];
  const registry = createFileRegistry(file, (name) => deps.find((d) => d.name === name.replace(/\.proto$/, "")));
  return registry.getService("shop.v1.Shop")!;

  function method(name: string, input: string, output: string, rule: MessageInitShape<typeof HttpRuleSchema>, serverStreaming = false) {
    const options = create(MethodOptionsSchema);
    setExtension(options, http, create(HttpRuleSchema, rule));
    return { name, inputType: `.shop.v1.${input}`, outputType: `.shop.v1.${output}`, options, serverStreaming };
  }
}

function routesOf(service: DescService) {
  const methods: BoundMethod[] = service.methods.map((desc) => ({
    info: methodInfo(desc),
    invoke: () => Promise.reject(new Error("unused")),
  }));
  return compileRoutes(methods);
}

function documentOf(service: DescService, options: Partial<OpenApiOptions> = {}) {
  return buildOpenApi(routesOf(service), { title: "t", version: "1.0.0", services: [service], ...options }) as unknown as {
    paths: Record<string, Record<string, Json & { parameters: Json[]; responses: Record<string, Json> }>>;
    definitions: Record<string, Json & { properties: Record<string, Json> }>;
    [key: string]: unknown;
  };
}

const param = (op: { parameters: Json[] }, name: string) => op.parameters.find((p) => p.name === name);

describe("OpenAPI document of the FixtureService", () => {
  const doc = documentOf(FixtureService, { sse: true });

  test("a validator accepts it", async () => {
    await SwaggerParser.validate(structuredClone(doc) as never);
  });

  test("paths, operation IDs and tags follow the http rules", () => {
    assert.equal(doc.swagger, "2.0");
    // The template's own paths, in declaration order (a service that added methods has more besides).
    const known = [
      "/api/v1/echo",
      "/api/v1/echo/{message}",
      "/api/v1/countdown/{from}",
      "/api/v1/countdown",
      "/api/v1/fail",
      "/api/v1/sum",
      "/api/v1/chat",
    ];
    assert.deepEqual(
      Object.keys(doc.paths).filter((p) => known.includes(p)),
      known,
    );
    assert.equal(doc.paths["/api/v1/echo"]!.post!.operationId, "FixtureService_Echo");
    assert.equal(doc.paths["/api/v1/echo/{message}"]!.get!.operationId, "FixtureService_Echo2");
    assert.deepEqual(doc.paths["/api/v1/fail"]!.post!.tags, ["FixtureService"]);
    assert.deepEqual(doc.tags, [{ name: "FixtureService", description: "gRPC service fixture.v1.FixtureService" }]);
  });

  test("Echo: the whole request as the POST body, the path parameter and the rest in the query on GET", () => {
    assert.deepEqual(doc.paths["/api/v1/echo"]!.post!.parameters, [
      { name: "body", in: "body", required: true, schema: { $ref: "#/definitions/fixture.v1.EchoRequest" } },
    ]);
    const get = doc.paths["/api/v1/echo/{message}"]!.get!;
    assert.deepEqual(param(get, "message"), { name: "message", in: "path", required: true, type: "string", minLength: 1, maxLength: 1024 });
    assert.deepEqual(
      get.parameters.map((p) => [p.name, p.in]),
      [
        ["message", "path"],
        ["traceId", "query"],
        ["debug", "query"],
        ["delayMs", "query"],
        ["workUs", "query"],
      ],
    );
    assert.deepEqual(param(get, "debug"), { name: "debug", in: "query", required: false, type: "boolean" });
  });

  test("responses: the message, and google.rpc.Status as the default", () => {
    const post = doc.paths["/api/v1/echo"]!.post!;
    assert.deepEqual(post.responses["200"], {
      description: "A successful response.",
      schema: { $ref: "#/definitions/fixture.v1.EchoResponse" },
    });
    assert.deepEqual(post.responses.default, {
      description: "An unexpected error response.",
      schema: { $ref: "#/definitions/google.rpc.Status" },
    });
    assert.deepEqual(doc.definitions["fixture.v1.EchoResponse"]!.properties.receivedAt, {
      type: "string",
      format: "date-time",
      description: "RFC 3339 timestamp, e.g. 2026-01-02T03:04:05.678Z",
    });
    assert.deepEqual(Object.keys(doc.definitions["google.rpc.Status"]!.properties), ["code", "message", "details"]);
    assert.deepEqual(doc.definitions["google.rpc.Status"]!.properties.details!.items, { $ref: "#/definitions/google.protobuf.Any" });
  });

  test("Countdown is marked as a stream of {result} lines, NDJSON or SSE", () => {
    for (const op of [doc.paths["/api/v1/countdown/{from}"]!.get!, doc.paths["/api/v1/countdown"]!.post!]) {
      assert.equal(op["x-stream"], "server");
      assert.deepEqual(op.produces, ["application/x-ndjson", "text/event-stream"]);
      assert.match(String(op.description), /newline-delimited JSON/);
      assert.match(String(op.description), /text\/event-stream/);
      assert.deepEqual(op.responses["200"]!.schema, {
        type: "object",
        title: "Stream result of fixture.v1.CountdownResponse",
        properties: { result: { $ref: "#/definitions/fixture.v1.CountdownResponse" }, error: { $ref: "#/definitions/google.rpc.Status" } },
      });
    }
    const noSse = documentOf(FixtureService, { sse: false });
    assert.deepEqual(noSse.paths["/api/v1/countdown"]!.post!.produces, ["application/x-ndjson"]);
    assert.doesNotMatch(String(noSse.paths["/api/v1/countdown"]!.post!.description), /event-stream/);
  });

  test("protovalidate limits become schema limits", () => {
    assert.deepEqual(doc.definitions["fixture.v1.CountdownRequest"]!.properties.from, {
      type: "integer",
      format: "int64",
      minimum: 1,
      maximum: 1000,
    });
    assert.deepEqual(doc.definitions["fixture.v1.FailRequest"]!.properties.code, {
      type: "integer",
      format: "int32",
      minimum: 0,
      maximum: 16,
    });
  });

  test("security schemes only when auth is on, applied globally", () => {
    assert.equal(doc.securityDefinitions, undefined);
    assert.equal(doc.security, undefined);
    const jwt = documentOf(FixtureService, { jwt: true });
    assert.deepEqual(Object.keys(jwt.securityDefinitions as Json), ["BearerAuth"]);
    assert.deepEqual(jwt.security, [{ BearerAuth: [] }]);
    const both = documentOf(FixtureService, { jwt: true, apiKey: true });
    assert.deepEqual((both.securityDefinitions as Json).ApiKeyAuth, {
      type: "apiKey",
      in: "header",
      name: "x-api-key",
      description: "One of the service's API keys.",
    });
    assert.deepEqual(both.security, [{ BearerAuth: [] }, { ApiKeyAuth: [] }]);
  });

  test("the document is named after the first segment of the proto package", () => {
    assert.equal(documentStem([FixtureService]), "fixture");
    assert.equal(documentStem([]), "api");
  });
});

describe("OpenAPI document of every HttpRule feature", () => {
  const shop = shopService();
  const doc = documentOf(shop);
  const book = doc.definitions["shop.v1.Book"]!;

  test("a validator accepts it", async () => {
    await SwaggerParser.validate(structuredClone(doc) as never);
  });

  test("{name=shelves/*/books/*} becomes {name} with a pattern; a clash on the same path and method gets {name_1}", () => {
    assert.deepEqual(Object.keys(doc.paths), [
      "/v1/{name}",
      "/v1/{book.name}",
      "/v1/{parent}/books",
      "/v1/books",
      "/v1/{name}:publish",
      "/v1/{parent}/books:watch",
      "/v1/{name_1}",
      "/v1/{parent}/genre",
    ]);
    assert.deepEqual(param(doc.paths["/v1/{name}"]!.get!, "name"), {
      name: "name",
      in: "path",
      required: true,
      type: "string",
      pattern: "^shelves/[^/]+/books/[^/]+$",
      description: "Field name: a resource name of the form shelves/*/books/*.",
    });
    const author = doc.paths["/v1/{name_1}"]!.get!;
    assert.equal(author.operationId, "Shop_GetAuthorBook");
    assert.equal(param(author, "name_1")!.pattern, "^authors/[^/]+/books/[^/]+$");
  });

  test("query parameters: unbound scalars, enums, repeated and nested fields by JSON name; maps left out", () => {
    const get = doc.paths["/v1/{name}"]!.get!;
    assert.deepEqual(param(get, "readMask"), {
      name: "readMask",
      in: "query",
      required: false,
      type: "string",
      description: 'Comma-separated field paths in lowerCamelCase, e.g. "title,author.name"',
    });
    assert.deepEqual(param(get, "genres"), {
      name: "genres",
      in: "query",
      required: false,
      type: "array",
      items: { type: "string", enum: ["GENRE_UNSPECIFIED", "GENRE_FICTION", "GENRE_POETRY"], default: "GENRE_UNSPECIFIED" },
      collectionFormat: "multi",
    });
    assert.deepEqual(param(get, "minPages"), { name: "minPages", in: "query", required: false, type: "string", format: "int64" });
    assert.deepEqual(param(get, "since"), {
      name: "since",
      in: "query",
      required: false,
      type: "string",
      format: "date-time",
      description: "RFC 3339 timestamp, e.g. 2026-01-02T03:04:05.678Z",
    });
    assert.deepEqual(param(get, "author.displayName"), { name: "author.displayName", in: "query", required: false, type: "string" });
    assert.equal(param(get, "author.favourite.pageCount")?.format, "int64");
    assert.equal(param(get, "filters"), undefined);
    assert.equal(param(get, "author.favourite.author.displayName"), undefined, "recursion stops at a type already on the path");
    assert.equal(param(get, "name")!.in, "path");
  });

  test('body: "book" sends the field; the rest of the request is in the query', () => {
    const patch = doc.paths["/v1/{book.name}"]!.patch!;
    assert.deepEqual(
      patch.parameters.map((p) => [p.name, p.in]),
      [
        ["book.name", "path"],
        ["book", "body"],
        ["updateMask", "query"],
      ],
    );
    assert.deepEqual(param(patch, "book")!.schema, { $ref: "#/definitions/shop.v1.Book" });
    const put = doc.paths["/v1/{parent}/genre"]!.put!;
    assert.deepEqual(param(put, "genre"), { name: "genre", in: "body", required: true, schema: { $ref: "#/definitions/shop.v1.Genre" } });
    assert.deepEqual(param(put, "pageSize"), { name: "pageSize", in: "query", required: false, type: "integer", format: "int32" });
  });

  test('body: "*" with a path variable: the body is the message without the bound field, and there is no query', () => {
    const publish = doc.paths["/v1/{name}:publish"]!.post!;
    assert.deepEqual(
      publish.parameters.map((p) => [p.name, p.in]),
      [
        ["name", "path"],
        ["body", "body"],
      ],
    );
    const schema = param(publish, "body")!.schema as { properties: Json };
    assert.deepEqual(Object.keys(schema.properties), ["readMask", "genres", "author", "filters", "minPages", "since"]);
  });

  test("response_body: the field's schema; additional bindings get numbered operation IDs", () => {
    const list = doc.paths["/v1/{parent}/books"]!.get!;
    assert.equal(list.operationId, "Shop_ListBooks");
    assert.equal(doc.paths["/v1/books"]!.get!.operationId, "Shop_ListBooks2");
    assert.deepEqual(list.responses["200"]!.schema, { type: "array", items: { $ref: "#/definitions/shop.v1.Book" } });
  });

  test("server streaming without SSE lists NDJSON only", () => {
    const watch = doc.paths["/v1/{parent}/books:watch"]!.get!;
    assert.equal(watch["x-stream"], "server");
    assert.deepEqual(watch.produces, ["application/x-ndjson"]);
    assert.deepEqual((watch.responses["200"]!.schema as { properties: Json }).properties.result, { $ref: "#/definitions/shop.v1.Book" });
  });

  test("custom methods OpenAPI 2.0 cannot name are left out", () => {
    assert.ok(!Object.values(doc.paths).some((item) => Object.values(item).some((op) => op.operationId === "Shop_Purge")));
  });

  test("schemas are canonical proto3 JSON", () => {
    const p = book.properties;
    assert.deepEqual(p.pageCount, { type: "string", format: "int64" });
    assert.deepEqual(p.isbn, { type: "string", format: "uint64" });
    assert.deepEqual(p.serial, { type: "string", format: "uint64" });
    assert.deepEqual(p.genre, { $ref: "#/definitions/shop.v1.Genre" });
    assert.deepEqual(doc.definitions["shop.v1.Genre"], {
      type: "string",
      enum: ["GENRE_UNSPECIFIED", "GENRE_FICTION", "GENRE_POETRY"],
      default: "GENRE_UNSPECIFIED",
    });
    assert.deepEqual(p.tags, { type: "array", items: { type: "string" } });
    assert.deepEqual(p.ratings, { type: "object", additionalProperties: { type: "integer", format: "int32" } });
    assert.deepEqual(p.byYear, {
      type: "object",
      additionalProperties: { $ref: "#/definitions/shop.v1.Genre" },
      description: "Keys are integers written as strings.",
    });
    assert.deepEqual(p.cover, { type: "string", format: "byte" });
    assert.equal(p.publishedAt!.format, "date-time");
    assert.deepEqual(p.readTime, {
      type: "string",
      pattern: "^-?[0-9]+(\\.[0-9]{1,9})?s$",
      description: 'Duration in seconds with an "s" suffix, e.g. "1.5s"',
    });
    assert.deepEqual(p.copies, { type: "string", format: "int64" });
    assert.deepEqual(p.inPrint, { type: "boolean" });
    assert.deepEqual(p.metadata, { type: "object", additionalProperties: {}, description: "Any JSON object." });
    assert.deepEqual(p.extra, { description: "Any JSON value." });
    assert.deepEqual(p.shelfMarks, { type: "array", items: {}, description: "A JSON array of any values." });
    assert.deepEqual(p.nothing, { type: "object", description: "An empty JSON object." });
    assert.deepEqual(p.attachment, { $ref: "#/definitions/google.protobuf.Any" });
    assert.deepEqual(p.price, { type: "number", format: "double" });
    assert.deepEqual(p.weight, { type: "number", format: "float" });
    assert.deepEqual(p.delta, { type: "integer", format: "int32" });
    assert.deepEqual(p.available, { type: "boolean" });
  });

  test("oneof members are plain optional properties with a note; recursive messages are $refs", () => {
    assert.deepEqual(book.properties.url, { type: "string" });
    assert.deepEqual(book.properties.original, { $ref: "#/definitions/shop.v1.Book" });
    assert.deepEqual(book.properties.firstEdition, { type: "string" });
    assert.equal(book.description, "At most one of url, original is set (oneof source).");
    assert.deepEqual(book.properties.related, { type: "array", items: { $ref: "#/definitions/shop.v1.Book" } });
    assert.deepEqual(doc.definitions["shop.v1.Author"]!.properties.favourite, { $ref: "#/definitions/shop.v1.Book" });
    assert.equal(book.required, undefined);
  });

  test("building it is cheap", () => {
    const routes = routesOf(shop);
    const start = performance.now();
    for (let i = 0; i < 20; i++) buildOpenApi(routes, { title: "t", version: "1", services: [shop] });
    const each = (performance.now() - start) / 20;
    assert.ok(each < 20, `${each.toFixed(2)} ms per document`);
  });
});

describe("OpenAPI document of client-streaming and bidi routes", () => {
  const doc = documentOf(StreamService, { sse: true });

  test("a validator accepts it", async () => {
    await SwaggerParser.validate(structuredClone(doc) as never);
  });

  test("client-streaming: the body is a stream of the request message (or of its body field), answered by one message", () => {
    const total = doc.paths["/v1/totals"]!.post!;
    assert.equal(total["x-stream"], "client");
    assert.deepEqual(total.consumes, ["application/x-ndjson", "application/json"]);
    assert.deepEqual(total.parameters, [
      {
        name: "body",
        in: "body",
        required: true,
        description: "A stream of gatewaytest.v1.TotalRequest messages (streaming inputs).",
        schema: { $ref: "#/definitions/gatewaytest.v1.TotalRequest" },
      },
    ]);
    assert.deepEqual(total.responses["200"], {
      description: "A successful response.",
      schema: { $ref: "#/definitions/gatewaytest.v1.TotalResponse" },
    });
    assert.match(String(total.description), /Client streaming\. The request body is a stream of JSON messages/);
    assert.match(String(total.description), /newline-delimited or concatenated/);

    const values = doc.paths["/v1/totals/{label}:values"]!.post!;
    assert.deepEqual(param(values, "value"), {
      name: "value",
      in: "body",
      required: true,
      description: "A stream of the value field of gatewaytest.v1.TotalRequest messages (streaming inputs).",
      schema: { type: "string", format: "int64" },
    });
    assert.deepEqual(param(values, "label"), { name: "label", in: "path", required: true, type: "string" });
  });

  test("bidi: a stream in, a stream of {result} lines out", () => {
    const converse = doc.paths["/v1/conversations"]!.post!;
    assert.equal(converse["x-stream"], "bidi");
    assert.deepEqual(converse.consumes, ["application/x-ndjson", "application/json"]);
    assert.deepEqual(converse.produces, ["application/x-ndjson", "text/event-stream"]);
    assert.match(String(converse.description), /Bidirectional streaming\./);
    assert.match(String(converse.description), /Each answer is written as it is produced\. The response is newline-delimited JSON/);
    assert.deepEqual(converse.responses["200"]!.schema, {
      type: "object",
      title: "Stream result of gatewaytest.v1.ConverseResponse",
      properties: {
        result: { $ref: "#/definitions/gatewaytest.v1.ConverseResponse" },
        error: { $ref: "#/definitions/google.rpc.Status" },
      },
    });
  });
});
