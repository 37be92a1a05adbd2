/**
 * google.api.http transcoding, end to end through each gateway mode, on the test-only
 * LibraryService (test/proto/gatewaytest/v1/library.proto): every test asserts the exact
 * request the handler saw and the exact JSON the client got.
 */
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { Code } from "../../src/framework/index.js";
import { startTestServer, type TestServer } from "../../src/framework/testing/harness.js";
import { createLibrary } from "./gateway-library.js";

interface Reply {
  status: number;
  headers: Headers;
  text: string;
}

const DUNE = (name: string) =>
  `{"name":"${name}","title":"Dune","id":"9007199254740993","genre":"GENRE_FICTION","tags":["sf","classic"],` +
  `"labels":{"lang":"en"},"author":{"name":"Frank Herbert","born":1920},"published":"1965-08-01T00:00:00Z"}`;

/** Every query feature at once: scalars, int64 as strings, enums by name and number, repeated keys, maps, nested, oneof, WKTs. */
const FULL_QUERY = [
  "int32Value=-5",
  "int64_value=-9007199254740993",
  "uint64Value=18446744073709551615",
  "doubleValue=1.5",
  "floatValue=0.25",
  "boolValue=true",
  "stringValue=a+b%26c",
  "bytesValue=aGk%3D",
  "enumValue=GENRE_HISTORY",
  "repeatedString=x",
  "repeatedString=y",
  "repeatedInt64=1",
  "repeated_int64=2",
  "repeatedEnum=1",
  "repeatedEnum=GENRE_HISTORY",
  "labels[a]=1",
  "labels%5Bb%5D=2",
  "genreByNumber[7]=GENRE_FICTION",
  "nested.label=n",
  "nested.deeper.note=deep",
  "isbn=978",
  "timestamp=2024-01-02T03:04:05.5Z",
  "duration=1.5s",
  "field_mask=title,author.name,published_at",
  "stringWrapper=w",
  "int64Wrapper=12",
  "boolWrapper=false",
  "doubleWrapper=2.5",
  `structValue=${encodeURIComponent('{"k":[1,"x"]}')}`,
  "value=hello",
  "listValue=[1,2]",
  "optionalString=",
  "customName=renamed",
].join("&");

const FULL_REQUEST = {
  int32Value: -5,
  int64Value: "-9007199254740993",
  uint64Value: "18446744073709551615",
  doubleValue: 1.5,
  floatValue: 0.25,
  boolValue: true,
  stringValue: "a b&c",
  bytesValue: "aGk=",
  enumValue: "GENRE_HISTORY",
  repeatedString: ["x", "y"],
  repeatedInt64: ["1", "2"],
  repeatedEnum: ["GENRE_FICTION", "GENRE_HISTORY"],
  labels: { a: "1", b: "2" },
  genreByNumber: { "7": "GENRE_FICTION" },
  nested: { label: "n", deeper: { note: "deep" } },
  isbn: "978",
  timestamp: "2024-01-02T03:04:05.500Z",
  duration: "1.500s",
  fieldMask: "title,author.name,publishedAt",
  stringWrapper: "w",
  int64Wrapper: "12",
  boolWrapper: false,
  doubleWrapper: 2.5,
  structValue: { k: [1, "x"] },
  value: "hello",
  listValue: [1, 2],
  optionalString: "",
  customName: "renamed",
};

/** QueryRequest's canonical JSON with every zero value, as the gateway writes it. */
const QUERY_ZERO = {
  int32Value: 0,
  int64Value: "0",
  uint64Value: "0",
  doubleValue: 0,
  floatValue: 0,
  boolValue: false,
  stringValue: "",
  bytesValue: "",
  enumValue: "GENRE_UNSPECIFIED",
  repeatedString: [],
  repeatedInt64: [],
  repeatedEnum: [],
  labels: {},
  genreByNumber: {},
  customName: "",
  nestedList: [],
};

for (const mode of ["tcp", "unix", "in-process"] as const) {
  describe(`transcoding (gateway mode ${mode})`, () => {
    const library = createLibrary();
    let server: TestServer;
    before(async () => {
      server = await startTestServer([library.service], { GATEWAY_MODE: mode });
    });
    after(() => server.close());

    async function send(method: string, path: string, body?: unknown, headers: Record<string, string> = {}): Promise<Reply> {
      const init: RequestInit = { method, headers: { ...headers } };
      if (body !== undefined) {
        init.body = typeof body === "string" ? body : JSON.stringify(body);
        (init.headers as Record<string, string>)["content-type"] ??= "application/json";
      }
      const res = await fetch(`${server.httpUrl}${path}`, init);
      return { status: res.status, headers: res.headers, text: await res.text() };
    }

    /** The request the handler saw last, with the method it went to. */
    function seen(): { method: string; request: unknown } {
      const last = library.last();
      assert.ok(last, "the handler was called");
      return { method: last.method, request: last.request };
    }

    function assertOk(reply: Reply, body: string): void {
      assert.equal(reply.status, 200, reply.text);
      assert.match(reply.headers.get("content-type") ?? "", /^application\/json/);
      assert.equal(reply.text, body);
    }

    function assertInvalid(reply: Reply, message: RegExp): void {
      assert.equal(reply.status, 400, reply.text);
      const body = JSON.parse(reply.text) as { code: number; message: string; details: unknown[] };
      assert.equal(body.code, Code.INVALID_ARGUMENT);
      assert.match(body.message, message);
      assert.deepEqual(body.details, []);
    }

    describe("path templates", () => {
      test("{name=shelves/*/books/*} binds the whole matched resource name", async () => {
        assertOk(await send("GET", "/v1/shelves/s1/books/b1"), DUNE("shelves/s1/books/b1"));
        assert.deepEqual(seen(), { method: "GetBook", request: { name: "shelves/s1/books/b1" } });
      });

      test("a multi-segment variable decodes everything but %2F", async () => {
        assertOk(await send("GET", "/v1/shelves/s%201/books/a%2Fb%3F"), DUNE("shelves/s 1/books/a%2Fb?"));
        assert.deepEqual(seen().request, { name: "shelves/s 1/books/a%2Fb?" });
      });

      test("a multi-segment variable keeps %2f as the client sent it, lower case included (HttpRule, grpc-gateway)", async () => {
        assertOk(await send("GET", "/v1/books/a%2fb/c%2Fd%2fe%41"), DUNE("a%2fb/c%2Fd%2feA"));
        assert.deepEqual(seen(), { method: "GetBook", request: { name: "a%2fb/c%2Fd%2feA" } });
      });

      test("{name=**} takes any number of segments (additional binding), including a colon that is no verb", async () => {
        assertOk(await send("GET", "/v1/books/a/b%2Fc/d:e"), DUNE("a/b%2Fc/d:e"));
        assert.deepEqual(seen(), { method: "GetBook", request: { name: "a/b%2Fc/d:e" } });
      });

      test("a bare ** matches the rest of the path and binds nothing", async () => {
        const reply = await send("GET", "/v1/static/any/depth/here");
        assert.equal(reply.status, 200, reply.text);
        assert.deepEqual(JSON.parse(reply.text), QUERY_ZERO);
        assert.deepEqual(seen(), { method: "Query", request: {} });
      });

      test("a single-segment variable is fully decoded; int64, enum by name or number, bool and nested {a.b} from the path", async () => {
        const reply = await send("GET", "/v1/query/-9223372036854775808/GENRE_HISTORY/true/a%2Fb%20c");
        assert.equal(reply.status, 200, reply.text);
        const request = { int64Value: "-9223372036854775808", boolValue: true, enumValue: "GENRE_HISTORY", nested: { label: "a/b c" } };
        assert.deepEqual(seen().request, request);
        assert.deepEqual(JSON.parse(reply.text), { ...QUERY_ZERO, ...request, nested: { label: "a/b c", count: 0 } });
        await send("GET", "/v1/query/7/1/0/x");
        assert.deepEqual(seen().request, { int64Value: "7", enumValue: "GENRE_FICTION", nested: { label: "x" } });
      });

      test("a path value wins over the query", async () => {
        await send("GET", "/v1/query/7/1/true/x?int64Value=8&nested.label=y&nested.count=3");
        assert.deepEqual(seen().request, {
          int64Value: "7",
          boolValue: true,
          enumValue: "GENRE_FICTION",
          nested: { label: "x", count: 3 },
        });
      });

      test("a custom verb routes to its own binding", async () => {
        assertOk(
          await send("POST", "/v1/shelves/s1/books/b1:publish", { at: "2024-01-02T03:04:05Z", name: "ignored" }),
          '{"name":"shelves/s1/books/b1","title":"","id":"0","genre":"GENRE_UNSPECIFIED","tags":[],"labels":{},"published":"2024-01-02T03:04:05Z"}',
        );
        assert.deepEqual(seen(), { method: "PublishBook", request: { name: "shelves/s1/books/b1", at: "2024-01-02T03:04:05Z" } });
      });

      test("a custom method kind (SEARCH) is served", async () => {
        const reply = await send("SEARCH", "/v1/query?isbn=42");
        assert.equal(reply.status, 200, reply.text);
        assert.deepEqual(seen(), { method: "Query", request: { isbn: "42" } });
        assert.deepEqual(JSON.parse(reply.text), { ...QUERY_ZERO, isbn: "42" });
      });

      test("HEAD is served by the GET binding, without a body", async () => {
        const reply = await send("HEAD", "/v1/shelves/s1/books/b1");
        assert.equal(reply.status, 200);
        assert.equal(reply.text, "");
        assert.deepEqual(seen(), { method: "GetBook", request: { name: "shelves/s1/books/b1" } });
      });
    });

    describe("bodies", () => {
      test('body: "book" fills that message field; the query fills the rest, but never under the body field', async () => {
        const reply = await send("POST", "/v1/shelves/s1/books?bookId=42&validate_only=true&book.title=ignored", {
          title: "Dune",
          genre: "GENRE_HISTORY",
          unknownField: 1,
        });
        assertOk(reply, '{"name":"shelves/s1/books/42","title":"Dune","id":"0","genre":"GENRE_HISTORY","tags":[],"labels":{}}');
        assert.deepEqual(seen(), {
          method: "CreateBook",
          request: { parent: "shelves/s1", book: { title: "Dune", genre: "GENRE_HISTORY" }, bookId: "42", validateOnly: true },
        });
      });

      test("a nested path variable {book.name=…} lands inside the body field and wins over the body", async () => {
        const reply = await send("PATCH", "/v1/shelves/s1/books/b1?updateMask=title,author.name", {
          name: "shelves/x/books/y",
          title: "New",
          author: { name: "F. H." },
        });
        assertOk(
          reply,
          '{"name":"shelves/s1/books/b1","title":"New","id":"0","genre":"GENRE_UNSPECIFIED","tags":[],"labels":{},"author":{"name":"F. H.","born":0}}',
        );
        assert.deepEqual(seen(), {
          method: "UpdateBook",
          request: { book: { name: "shelves/s1/books/b1", title: "New", author: { name: "F. H." } }, updateMask: "title,author.name" },
        });
      });

      test("PATCH without update_mask fills it from the fields of the JSON body, nested paths included", async () => {
        const reply = await send("PATCH", "/v1/shelves/s1/books/b1", {
          title: "New",
          author: { name: "F. H." },
          tags: ["a"],
          labels: { k: "v" },
          published: "2020-01-01T00:00:00Z",
          unknownField: 1,
        });
        assert.equal(reply.status, 200);
        assert.deepEqual(seen(), {
          method: "UpdateBook",
          request: {
            book: {
              name: "shelves/s1/books/b1",
              title: "New",
              tags: ["a"],
              labels: { k: "v" },
              author: { name: "F. H." },
              published: "2020-01-01T00:00:00Z",
            },
            updateMask: "title,author.name,tags,labels,published",
          },
        });
        // An empty nested object names the whole field; a mask the request sets is kept as it is.
        await send("PATCH", "/v1/shelves/s1/books/b1", { author: {} });
        assert.equal((seen().request as { updateMask: string }).updateMask, "author");
        await send("PATCH", "/v1/shelves/s1/books/b1?updateMask=genre", { title: "T" });
        assert.equal((seen().request as { updateMask: string }).updateMask, "genre");
      });

      test('body: "title" takes a bare JSON string for a primitive field', async () => {
        const reply = await send("PUT", "/v1/shelves/s1/books/b1/title?notify=true", '"Children of Dune"');
        assertOk(
          reply,
          '{"name":"shelves/s1/books/b1","title":"Children of Dune","id":"0","genre":"GENRE_UNSPECIFIED","tags":[],"labels":{}}',
        );
        assert.deepEqual(seen(), { method: "SetTitle", request: { name: "shelves/s1/books/b1", title: "Children of Dune", notify: true } });
      });

      test('body: "*" takes every field and ignores the query; the empty body is the empty message', async () => {
        const reply = await send("POST", "/v1/query?isbn=ignored", {
          int64Value: "12",
          enum_value: 2,
          nestedList: [{ label: "a" }, { count: 2 }],
          bookId: "5",
        });
        assert.equal(reply.status, 200, reply.text);
        const request = { int64Value: "12", enumValue: "GENRE_HISTORY", bookId: "5", nestedList: [{ label: "a" }, { count: 2 }] };
        assert.deepEqual(seen(), { method: "Query", request });
        assert.deepEqual(JSON.parse(reply.text), {
          ...QUERY_ZERO,
          ...request,
          nestedList: [
            { label: "a", count: 0 },
            { label: "", count: 2 },
          ],
        });
        assert.equal((await send("POST", "/v1/query", "")).status, 200);
        assert.deepEqual(seen().request, {});
      });

      test("no body rule: a body is ignored", async () => {
        assertOk(await send("DELETE", "/v1/shelves/s1/books/b1", { name: "other" }), "{}");
        assert.deepEqual(seen(), { method: "DeleteBook", request: { name: "shelves/s1/books/b1" } });
      });
    });

    describe("response_body", () => {
      test("a scalar field is sent alone", async () => {
        assertOk(await send("GET", "/v1/shelves/s1/books/b1/title"), '"Dune"');
        assert.deepEqual(seen(), { method: "GetBook", request: { name: "shelves/s1/books/b1" } });
      });

      test("a repeated field is a bare JSON array, [] when empty", async () => {
        assertOk(await send("GET", "/v1/shelves/s1/books?pageSize=2"), `[${DUNE("shelves/s1/books/1")},${DUNE("shelves/s1/books/2")}]`);
        assert.deepEqual(seen(), { method: "ListBooks", request: { parent: "shelves/s1", pageSize: 2 } });
        assertOk(await send("GET", "/v1/shelves/s1/books"), "[]");
      });
    });

    describe("query parameters", () => {
      test("every field kind: int64 as strings, enums by name or number, repeated keys, maps, nested, oneof, well-known types", async () => {
        const reply = await send("GET", `/v1/query?${FULL_QUERY}`);
        assert.equal(reply.status, 200, reply.text);
        assert.deepEqual(seen(), { method: "Query", request: FULL_REQUEST });
        assert.deepEqual(JSON.parse(reply.text), {
          ...QUERY_ZERO,
          ...FULL_REQUEST,
          nested: { label: "n", count: 0, deeper: { note: "deep" } },
        });
      });

      test("a oneof message member by dotted path; a Value that is JSON text is parsed", async () => {
        await send("GET", "/v1/query?nestedChoice.label=x&nested_choice.deeper.note=y&value=%7B%22a%22%3A1%7D");
        assert.deepEqual(seen().request, { nestedChoice: { label: "x", deeper: { note: "y" } }, value: { a: 1 } });
      });

      test("unknown keys and keys through repeated messages are ignored", async () => {
        await send("GET", "/v1/query?utm_source=x&nestedList.label=y&int32Value=3");
        assert.deepEqual(seen().request, { int32Value: 3 });
      });
    });

    describe("malformed requests are 400 code 3 naming the field", () => {
      const cases: [string, RegExp][] = [
        ["/v1/query?int32Value=abc", /int32_value/],
        ["/v1/query?uint64Value=-1", /uint64_value/],
        ["/v1/query?enumValue=GENRE_NOPE", /"enumValue".*GENRE_NOPE/],
        ["/v1/query?repeatedEnum=9", /"repeatedEnum".*"9"/],
        ["/v1/query?boolValue=maybe", /"boolValue".*"maybe"/],
        ["/v1/query?timestamp=yesterday", /"timestamp".*RFC 3339/],
        ["/v1/query?duration=5", /"duration"/],
        ["/v1/query?structValue=nope", /"structValue"/],
        ["/v1/query?nested.deeper=x", /"nested.deeper"/],
        ["/v1/query?labels=x", /"labels" is a map/],
        ["/v1/query?int32Value[k]=1", /"int32Value" is not a map/],
        ["/v1/query?int32Value=1&int32Value=2", /"int32Value" has too many values/],
        ["/v1/query?isbn=1&bookId=2", /oneof.*isbn.*book_id/],
        ["/v1/query?isbn=%zz", /malformed percent-encoding in query/],
        ["/v1/query/notanumber/1/true/x", /path parameter.*int64_value/],
        ["/v1/query/1/GENRE_NOPE/true/x", /"enumValue"/],
        ["/v1/query/1/1/yes/x", /"boolValue".*"yes"/],
        ["/v1/shelves/%zz/books/b1", /malformed percent-encoding in path/],
        ["/v1/shelves/%C3%28/books/b1", /malformed percent-encoding in path/],
      ];
      for (const [path, message] of cases) {
        test(`GET ${path}`, async () => {
          const before = library.seen.length;
          assertInvalid(await send("GET", path), message);
          assert.equal(library.seen.length, before, "the handler is not called");
        });
      }

      test("malformed JSON and wrong JSON types in the body", async () => {
        assertInvalid(await send("POST", "/v1/shelves/s1/books", '{"title":'), /malformed JSON body/);
        assertInvalid(await send("POST", "/v1/shelves/s1/books", { title: 5 }), /Book\.title/);
        assertInvalid(await send("PUT", "/v1/shelves/s1/books/b1/title", "Dune"), /malformed JSON body/);
        assertInvalid(await send("POST", "/v1/query", { int64Value: "x1" }), /int64_value/);
      });

      test("text/plain is 415 too, even when it holds JSON: it is what a cross-site form may post without a preflight", async () => {
        const reply = await send("POST", "/v1/shelves/s1/books", '{"title":"Dune"}', { "content-type": "text/plain" });
        assert.equal(reply.status, 415);
        assert.deepEqual(JSON.parse(reply.text), {
          code: Code.INVALID_ARGUMENT,
          message: 'unsupported content type "text/plain": send application/json',
          details: [],
        });
        const untyped = await fetch(`${server.httpUrl}/v1/shelves/s1/books`, { method: "POST", body: new Uint8Array([123, 125]) });
        assert.equal(untyped.status, 415);
        assert.equal(((await untyped.json()) as { message: string }).message, "missing Content-Type: send application/json");
      });

      test("a body that is not JSON is 415 with a JSON error", async () => {
        const reply = await send("POST", "/v1/shelves/s1/books", "<book/>", { "content-type": "application/xml" });
        assert.equal(reply.status, 415);
        assert.match(reply.headers.get("content-type") ?? "", /^application\/json/);
        const body = JSON.parse(reply.text) as { code: number; message: string };
        assert.equal(body.code, Code.INVALID_ARGUMENT);
        assert.match(body.message, /application\/xml/);
      });

      test("unknown paths are 404 code 5; a known path with another method is 405 code 12 with Allow", async () => {
        for (const path of ["/v1/shelves/s1", "/v1/shelves/s1/books/b1/x:unpublish", "/nope", "/"]) {
          const reply = await send("GET", path);
          assert.equal(reply.status, 404, path);
          assert.deepEqual(JSON.parse(reply.text), { code: Code.NOT_FOUND, message: "Not Found", details: [] });
        }
        const reply = await send("PUT", "/v1/query");
        assert.equal(reply.status, 405);
        assert.equal(reply.headers.get("allow"), "GET, POST, SEARCH");
        assert.deepEqual(JSON.parse(reply.text), { code: Code.UNIMPLEMENTED, message: "Method Not Allowed", details: [] });
        // As a verb only POST serves it; as a plain name ("b1:publish"), GET, PATCH and DELETE do.
        const verb = await send("PUT", "/v1/shelves/s1/books/b1:publish");
        assert.equal(verb.status, 405);
        assert.equal(verb.headers.get("allow"), "DELETE, GET, PATCH, POST");
      });
    });
  });
}
