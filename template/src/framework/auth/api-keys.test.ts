import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { apiKeyCheck } from "./api-keys.js";

describe("apiKeyCheck", () => {
  const matches = apiKeyCheck(["first-key", "second-key-that-is-longer", "ключ-🔑"]);

  test("accepts every configured key, whatever its length or alphabet", () => {
    for (const key of ["first-key", "second-key-that-is-longer", "ключ-🔑"]) assert.equal(matches(key), true, key);
  });

  test("rejects anything else: empty, prefixes, suffixes, other case, long input", () => {
    for (const key of ["", "first-ke", "first-key ", "FIRST-KEY", "first-keysecond-key-that-is-longer", "x".repeat(100_000)]) {
      assert.equal(matches(key), false, JSON.stringify(key.slice(0, 40)));
    }
  });

  test("with no keys configured nothing matches", () => {
    assert.equal(apiKeyCheck([])("anything"), false);
  });
});
