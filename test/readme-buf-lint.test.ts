// The README's advice for AIP-style protos, tried with the real buf on an AIP-style proto: its `lint:` block is the
// one buf.yaml has with `ignore_only` added (merged, not a second block), its rule list is complete (buf lint then
// passes), and `buf lint --error-format=config-ignore-yaml` names exactly those rules, as the README says.
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { after, test } from "node:test";
import { fileURLToPath } from "node:url";
import { parse, stringify } from "yaml";

const template = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../template");
const readme = fs.readFileSync(path.join(template, "README.md"), "utf8");
const work = fs.mkdtempSync(path.join(os.tmpdir(), "readme-buf-lint-"));
after(() => fs.rmSync(work, { recursive: true, force: true }));

const LIBRARY = `syntax = "proto3";

package library.v1;

import "google/protobuf/empty.proto";

// LibraryService keeps books, AIP style.
service LibraryService {
  // GetBook returns a book.
  rpc GetBook(GetBookRequest) returns (Book);
  // CreateBook adds a book.
  rpc CreateBook(CreateBookRequest) returns (Book);
  // DeleteBook removes a book.
  rpc DeleteBook(DeleteBookRequest) returns (google.protobuf.Empty);
  // PurgeBooks removes every book.
  rpc PurgeBooks(google.protobuf.Empty) returns (google.protobuf.Empty);
}

// Book is a book.
message Book {
  string name = 1;
}

// GetBookRequest names a book.
message GetBookRequest {
  string name = 1;
}

// CreateBookRequest carries the book.
message CreateBookRequest {
  Book book = 1;
}

// DeleteBookRequest names a book.
message DeleteBookRequest {
  string name = 1;
}
`;

// oxlint-disable-next-line typescript/no-explicit-any -- parsed YAML
type Any = any;

function readmeLintBlock(): Any {
  const m = /```yaml\n(lint:\n[\s\S]*?)```/.exec(readme);
  assert.ok(m, "the README shows a lint: block");
  return parse(m[1] as string).lint;
}

function lint(lintBlock: Any, ...args: string[]) {
  const config = parse(fs.readFileSync(path.join(template, "buf.yaml"), "utf8"));
  config.lint = lintBlock;
  config.modules = [{ path: "proto" }];
  fs.writeFileSync(path.join(work, "buf.yaml"), stringify(config));
  return spawnSync(path.join(template, "node_modules/.bin/buf"), ["lint", ...args], { cwd: work, encoding: "utf8" });
}

test("the README's AIP lint: block is buf.yaml's own with ignore_only added, and buf lint passes an AIP-style proto with it", () => {
  fs.cpSync(path.join(template, "proto"), path.join(work, "proto"), { recursive: true });
  fs.mkdirSync(path.join(work, "proto/library/v1"), { recursive: true });
  fs.writeFileSync(path.join(work, "proto/library/v1/library.proto"), LIBRARY);

  const own = parse(fs.readFileSync(path.join(template, "buf.yaml"), "utf8")).lint;
  const shown = readmeLintBlock();
  const { ignore_only: ignoreOnly, ...rest } = shown;
  assert.deepEqual(rest, own, "everything but ignore_only is what buf.yaml has: merge, do not replace");

  const without = lint(own);
  assert.equal(without.status, 100, without.stderr);
  assert.match(without.stdout, /library\.proto/);
  const named = lint(own, "--error-format=config-ignore-yaml");
  const rules = Object.keys(parse(named.stdout).lint.ignore_only).sort();
  assert.deepEqual(rules, Object.keys(ignoreOnly).sort(), "the README's list is the rules buf names, no more, no fewer");
  assert.match(readme, /--error-format=config-ignore-yaml/);

  const withIt = lint(shown);
  assert.equal(withIt.status, 0, withIt.stdout + withIt.stderr);
});
