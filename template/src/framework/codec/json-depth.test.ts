import assert from "node:assert/strict";
import { test } from "node:test";
import { jsonTooDeep, MAX_JSON_DEPTH } from "./json-depth.js";

const nest = (depth: number) => "[".repeat(depth) + "]".repeat(depth);

test("counts objects and arrays outside strings: 100 levels pass, 101 do not", () => {
  assert.equal(jsonTooDeep(nest(MAX_JSON_DEPTH)), false);
  assert.equal(jsonTooDeep(nest(MAX_JSON_DEPTH + 1)), true);
  assert.equal(jsonTooDeep(`${'{"a":'.repeat(101)}1${"}".repeat(101)}`), true);
  assert.equal(jsonTooDeep(`[${nest(50)},${nest(99)}]`), false); // depth, not count
});

test("brackets inside strings do not count, whatever the escapes before the closing quote", () => {
  assert.equal(jsonTooDeep(`["${"[".repeat(300)}"]`), false);
  assert.equal(jsonTooDeep(`["\\"${"[".repeat(300)}"]`), false);
  assert.equal(jsonTooDeep(`["\\\\", ${nest(101)}]`), true); // an escaped backslash, then the string ends
  assert.equal(jsonTooDeep(`["\\\\\\"${"[".repeat(300)}"]`), false); // \\ then \" : still inside
});

test("malformed text is left to JSON.parse", () => {
  assert.equal(jsonTooDeep(`"${"[".repeat(300)}`), false);
  assert.equal(jsonTooDeep("]".repeat(300)), false);
});
