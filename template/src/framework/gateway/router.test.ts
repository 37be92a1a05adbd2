import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { parsePathTemplate } from "./path-template.js";
import { type MatchResult, Router } from "./router.js";

function routerWith(routes: [method: string, template: string, name: string][]): Router<string> {
  const router = new Router<string>();
  for (const [method, template, name] of routes) router.add(method, parsePathTemplate(template), name);
  return router;
}

function found(result: MatchResult<string>): { route: string; segments: string[] } {
  assert.equal(result.kind, "found", `expected a match, got ${JSON.stringify(result)}`);
  if (result.kind !== "found") throw new Error("unreachable");
  return { route: result.route, segments: result.segments };
}

describe("Router", () => {
  test("a literal segment beats a wildcard at the same position", () => {
    const router = routerWith([
      ["GET", "/v1/books/{id}", "by-id"],
      ["GET", "/v1/books/special", "special"],
    ]);
    assert.equal(found(router.match("GET", "/v1/books/special")).route, "special");
    assert.equal(found(router.match("GET", "/v1/books/42")).route, "by-id");
  });

  test("an all-literal path matches its own method only; another method still finds a parameter route or 405", () => {
    const router = routerWith([
      ["GET", "/v1/books/list", "list"],
      ["POST", "/v1/books/{id}", "update"],
      ["GET", "/v1/shelves/%7Bx%7D", "escaped literal"],
    ]);
    assert.deepEqual(found(router.match("GET", "/v1/books/list")), { route: "list", segments: ["v1", "books", "list"] });
    assert.equal(found(router.match("HEAD", "/v1/books/list")).route, "list");
    assert.equal(found(router.match("POST", "/v1/books/list")).route, "update");
    assert.deepEqual(router.match("DELETE", "/v1/books/list"), { kind: "method-not-allowed", allow: ["GET", "POST"] });
    assert.equal(found(router.match("GET", "/v1/%62ooks/list")).route, "list"); // escaped: through the trie
    assert.equal(router.match("GET", "/v1/shelves/%7Bx%7D").kind, "not-found"); // literals compare decoded
  });

  test("a literal that leads to a dead end falls back to the wildcard branch", () => {
    const router = routerWith([
      ["GET", "/v1/books/special", "special"],
      ["GET", "/v1/books/{id}/pages", "pages"],
    ]);
    assert.equal(found(router.match("GET", "/v1/books/special/pages")).route, "pages");
  });

  test("* matches exactly one segment", () => {
    const router = routerWith([["GET", "/v1/*/books", "books"]]);
    assert.deepEqual(found(router.match("GET", "/v1/shelf1/books")), { route: "books", segments: ["v1", "shelf1", "books"] });
    assert.equal(router.match("GET", "/v1/a/b/books").kind, "not-found");
    assert.equal(router.match("GET", "/v1/books").kind, "not-found");
  });

  test("** matches any number of trailing segments, including none", () => {
    const router = routerWith([["GET", "/v1/files/**", "files"]]);
    assert.deepEqual(found(router.match("GET", "/v1/files/a/b/c.txt")).segments, ["v1", "files", "a", "b", "c.txt"]);
    assert.equal(found(router.match("GET", "/v1/files/a")).route, "files");
    assert.equal(found(router.match("GET", "/v1/files")).route, "files");
    assert.equal(router.match("GET", "/v1/other/a").kind, "not-found");
  });

  test("a more specific template wins over ** that would also match", () => {
    const router = routerWith([
      ["GET", "/v1/files/**", "files"],
      ["GET", "/v1/files/{id}/meta", "meta"],
    ]);
    assert.equal(found(router.match("GET", "/v1/files/7/meta")).route, "meta");
    assert.equal(found(router.match("GET", "/v1/files/7/other")).route, "files");
  });

  test("segments are returned still percent-encoded for the decoder", () => {
    const router = routerWith([["GET", "/v1/books/{id}", "by-id"]]);
    assert.deepEqual(found(router.match("GET", "/v1/books/a%2Fb%20c")).segments, ["v1", "books", "a%2Fb%20c"]);
  });

  test("literals are matched after percent-decoding", () => {
    const router = routerWith([["GET", "/v1/my books", "spaced"]]);
    assert.equal(found(router.match("GET", "/v1/my%20books")).route, "spaced");
  });

  describe("custom verbs", () => {
    const router = routerWith([
      ["POST", "/v1/books:publish", "publish-all"],
      ["POST", "/v1/books/{id}:publish", "publish-one"],
      ["GET", "/v1/books/{id}", "get"],
      ["GET", "/v1/books", "list"],
      ["GET", "/v1/a:b/c", "colon-literal"],
    ]);

    test("/v1/books:publish routes to the verb's template, with the verb stripped from the segments", () => {
      assert.deepEqual(found(router.match("POST", "/v1/books:publish")), { route: "publish-all", segments: ["v1", "books"] });
    });

    test("a verb after a variable strips the verb from the captured segment", () => {
      assert.deepEqual(found(router.match("POST", "/v1/books/7:publish")), { route: "publish-one", segments: ["v1", "books", "7"] });
    });

    test("a colon in the last segment that is no registered verb stays part of the value", () => {
      assert.deepEqual(found(router.match("GET", "/v1/books/a:b")), { route: "get", segments: ["v1", "books", "a:b"] });
    });

    test("a colon inside a non-final literal segment matches that literal", () => {
      assert.equal(found(router.match("GET", "/v1/a:b/c")).route, "colon-literal");
    });

    test("the path without the verb still reaches the verb-less route", () => {
      assert.equal(found(router.match("GET", "/v1/books")).route, "list");
    });
  });

  test("a known path with another method only is 405 with the sorted Allow list", () => {
    const router = routerWith([
      ["PUT", "/v1/books/{id}", "put"],
      ["GET", "/v1/books/{id}", "get"],
      ["DELETE", "/v1/books/{id}", "delete"],
    ]);
    assert.deepEqual(router.match("POST", "/v1/books/1"), { kind: "method-not-allowed", allow: ["DELETE", "GET", "PUT"] });
  });

  test("the Allow list gathers methods from every template that matches the path", () => {
    const router = routerWith([
      ["GET", "/v1/books/{id}", "get"],
      ["PATCH", "/v1/books/special", "patch-special"],
      ["DELETE", "/v1/books/**", "delete-any"],
    ]);
    assert.deepEqual(router.match("POST", "/v1/books/special"), { kind: "method-not-allowed", allow: ["DELETE", "GET", "PATCH"] });
  });

  test("a method that matches a less specific template is found rather than 405", () => {
    const router = routerWith([
      ["GET", "/v1/books/special", "get-special"],
      ["POST", "/v1/books/{id}", "post-any"],
    ]);
    assert.equal(found(router.match("POST", "/v1/books/special")).route, "post-any");
  });

  test("HEAD is served by the GET route unless a HEAD route exists", () => {
    const router = routerWith([
      ["GET", "/v1/books/{id}", "get"],
      ["GET", "/v1/shelves/{id}", "get-shelf"],
      ["HEAD", "/v1/shelves/{id}", "head-shelf"],
      ["POST", "/v1/notes", "post"],
    ]);
    assert.equal(found(router.match("HEAD", "/v1/books/1")).route, "get");
    assert.equal(found(router.match("HEAD", "/v1/shelves/1")).route, "head-shelf");
    assert.deepEqual(router.match("HEAD", "/v1/notes"), { kind: "method-not-allowed", allow: ["POST"] });
  });

  test("a verb and a literal colon: the verb's route first, then the colon as data", () => {
    const router = routerWith([
      ["POST", "/v1/{name=books/*}:publish", "publish"],
      ["GET", "/v1/{name=books/*}", "get"],
    ]);
    assert.deepEqual(found(router.match("POST", "/v1/books/a:publish")), { route: "publish", segments: ["v1", "books", "a"] });
    assert.deepEqual(found(router.match("GET", "/v1/books/a:publish")), { route: "get", segments: ["v1", "books", "a:publish"] });
    assert.deepEqual(router.match("PUT", "/v1/books/a:publish"), { kind: "method-not-allowed", allow: ["GET", "POST"] });
  });

  test("an unknown path is not-found", () => {
    const router = routerWith([["GET", "/v1/books", "list"]]);
    assert.deepEqual(router.match("GET", "/v2/books"), { kind: "not-found" });
    assert.deepEqual(router.match("GET", "/v1/books/extra"), { kind: "not-found" });
    assert.deepEqual(router.match("GET", "/v1"), { kind: "not-found" });
  });

  test("malformed percent-encoding is bad-path naming the path", () => {
    const router = routerWith([["GET", "/v1/books/{id}", "get"]]);
    const result = router.match("GET", "/v1/books/%zz");
    assert.equal(result.kind, "bad-path");
    assert.match(result.kind === "bad-path" ? result.reason : "", /percent-encoding.*\/v1\/books\/%zz/);
  });

  test("a path that does not start with / is bad-path", () => {
    const router = routerWith([["GET", "/v1/books", "list"]]);
    assert.deepEqual(router.match("GET", "v1/books"), { kind: "bad-path", reason: "path must start with /" });
    assert.equal(router.match("GET", "").kind, "bad-path");
  });

  test("adding the same method and template twice throws naming both", () => {
    const router = routerWith([["GET", "/v1/books/{id}", "first"]]);
    assert.throws(() => router.add("GET", parsePathTemplate("/v1/books/{name}"), "second"), /two routes for GET \/v1\/books\/\{name\}/);
    // Another method on the same template is fine.
    router.add("POST", parsePathTemplate("/v1/books/{id}"), "post");
    assert.equal(found(router.match("POST", "/v1/books/1")).route, "post");
    assert.equal(found(router.match("GET", "/v1/books/1")).route, "first");
  });

  test("the same template with different verbs are distinct routes", () => {
    const router = routerWith([
      ["POST", "/v1/books/{id}:publish", "publish"],
      ["POST", "/v1/books/{id}:archive", "archive"],
    ]);
    assert.equal(found(router.match("POST", "/v1/books/1:publish")).route, "publish");
    assert.equal(found(router.match("POST", "/v1/books/1:archive")).route, "archive");
  });
});
