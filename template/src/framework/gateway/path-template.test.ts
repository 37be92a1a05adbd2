import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { parsePathTemplate, TemplateError } from "./path-template.js";

describe("parsePathTemplate", () => {
  test("literal segments become literal segments in order, with no variables and no verb", () => {
    const t = parsePathTemplate("/v1/shelves/books");
    assert.equal(t.source, "/v1/shelves/books");
    assert.deepEqual(t.segments, [
      { kind: "literal", value: "v1" },
      { kind: "literal", value: "shelves" },
      { kind: "literal", value: "books" },
    ]);
    assert.deepEqual(t.variables, []);
    assert.equal(t.verb, "");
  });

  test("a bare * is one single-segment wildcard", () => {
    const t = parsePathTemplate("/v1/*/books");
    assert.deepEqual(t.segments, [{ kind: "literal", value: "v1" }, { kind: "single" }, { kind: "literal", value: "books" }]);
    assert.deepEqual(t.variables, []);
  });

  test("a trailing ** is one multi-segment wildcard", () => {
    const t = parsePathTemplate("/v1/files/**");
    assert.deepEqual(t.segments, [{ kind: "literal", value: "v1" }, { kind: "literal", value: "files" }, { kind: "multi" }]);
    assert.deepEqual(t.variables, []);
  });

  test("{field} captures exactly one segment", () => {
    const t = parsePathTemplate("/v1/books/{id}");
    assert.deepEqual(t.segments.at(-1), { kind: "single" });
    assert.deepEqual(t.variables, [{ fieldPath: ["id"], start: 2, end: 3 }]);
  });

  test("{a.b} is a dotted field path into a nested message", () => {
    const t = parsePathTemplate("/v1/{book.shelf.id}");
    assert.deepEqual(t.variables, [{ fieldPath: ["book", "shelf", "id"], start: 1, end: 2 }]);
    assert.equal(t.segments.length, 2);
  });

  test("{name=shelves/*/books/*} expands into its own segments and captures all of them", () => {
    const t = parsePathTemplate("/v1/{name=shelves/*/books/*}");
    assert.deepEqual(t.segments, [
      { kind: "literal", value: "v1" },
      { kind: "literal", value: "shelves" },
      { kind: "single" },
      { kind: "literal", value: "books" },
      { kind: "single" },
    ]);
    assert.deepEqual(t.variables, [{ fieldPath: ["name"], start: 1, end: 5 }]);
  });

  test("{name=**} captures the rest of the path, so its end is undefined", () => {
    const t = parsePathTemplate("/v1/{name=**}");
    assert.deepEqual(t.segments, [{ kind: "literal", value: "v1" }, { kind: "multi" }]);
    assert.equal(t.variables.length, 1);
    assert.deepEqual(t.variables[0]?.fieldPath, ["name"]);
    assert.equal(t.variables[0]?.start, 1);
    assert.equal(t.variables[0]?.end, undefined);
  });

  test("several variables keep their own segment ranges", () => {
    const t = parsePathTemplate("/v1/{shelf}/books/{book=**}");
    assert.deepEqual(t.variables, [
      { fieldPath: ["shelf"], start: 1, end: 2 },
      { fieldPath: ["book"], start: 3, end: undefined },
    ]);
  });

  test(":verb after a literal is split off as the custom verb", () => {
    const t = parsePathTemplate("/v1/books:publish");
    assert.equal(t.verb, "publish");
    assert.deepEqual(t.segments, [
      { kind: "literal", value: "v1" },
      { kind: "literal", value: "books" },
    ]);
  });

  test(":verb after a variable is split off, not taken into the variable", () => {
    const t = parsePathTemplate("/v1/{name=books/*}:archive");
    assert.equal(t.verb, "archive");
    assert.deepEqual(t.variables, [{ fieldPath: ["name"], start: 1, end: 3 }]);
  });

  test("a colon inside a non-final literal segment is part of the literal, not a verb", () => {
    const t = parsePathTemplate("/v1/a:b/c");
    assert.equal(t.verb, "");
    assert.deepEqual(t.segments[1], { kind: "literal", value: "a:b" });
  });

  describe("rejects with TemplateError", () => {
    const rejects = (source: string, message: RegExp) =>
      assert.throws(
        () => parsePathTemplate(source),
        (err: unknown) => {
          assert.ok(err instanceof TemplateError, `expected TemplateError, got ${String(err)}`);
          assert.match(err.message, message);
          return true;
        },
      );

    test("a template without a leading slash", () => rejects("v1/books", /must start with "\/"/));
    test("** that is not the last segment", () => rejects("/v1/**/books", /"\*\*" must be the last segment/));
    test("** inside a variable that is not the last segment", () => rejects("/v1/{name=**}/books", /"\*\*" must be the last segment/));
    test("an unclosed brace", () => rejects("/v1/{id", /unbalanced braces/));
    test("a closing brace without an opening one", () => rejects("/v1/id}", /unbalanced braces/));
    test("nested braces", () => rejects("/v1/{a={b}}", /unbalanced braces/));
    test("a field path with an empty part", () => rejects("/v1/{book.}", /bad field path "book\."/));
    test("a field path starting with a digit", () => rejects("/v1/{1book}", /bad field path "1book"/));
    test("an empty variable", () => rejects("/v1/{}", /bad field path ""/));
    test("an empty verb", () => rejects("/v1/books:", /empty verb/));
    test("an empty segment", () => rejects("/v1//books", /bad segment ""/));
    test("a variable with an empty pattern", () => rejects("/v1/{name=}", /bad segment ""/));
  });
});
