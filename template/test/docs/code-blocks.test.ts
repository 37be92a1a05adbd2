// A code block in docs/ whose info string names a file (```ts test/docs/calling-services/orders-service.ts) is
// that file, byte for byte: the page shows code that `make lint` type-checks and `make test` runs.
import assert from "node:assert/strict";
import fs from "node:fs";
import path from "node:path";
import { test } from "node:test";
import { fileURLToPath } from "node:url";

const root = fileURLToPath(new URL("../..", import.meta.url));
const pages = fs.readdirSync(path.join(root, "docs")).filter((f) => f.endsWith(".md"));

/** The blocks of a page that name a file: ```<lang> <path>. */
function fileBlocks(markdown: string) {
  return [...markdown.matchAll(/^```\w+ (\S+)\n([\s\S]*?)^```$/gm)].map((m) => ({ file: m[1]!, code: m[2]! }));
}

test("every code block in docs/ that names a file is that file", () => {
  let checked = 0;
  for (const page of pages) {
    for (const { file, code } of fileBlocks(fs.readFileSync(path.join(root, "docs", page), "utf8"))) {
      assert.equal(code, fs.readFileSync(path.join(root, file), "utf8"), `docs/${page}: the block naming ${file} differs from it`);
      checked++;
    }
  }
  assert.ok(checked >= 3, "docs/calling-services.md shows its proto, handler and test");
});
