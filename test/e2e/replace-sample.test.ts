// The README's "Replacing the sample API", followed as written in a freshly generated repo: its `make new-rpc`
// commands run exactly as the README shows them (renamed to the service), then the sample's five RPCs, their
// messages, handlers, worker and tests are deleted as step 2 says, and `make generate`, `make lint` and
// `make test` pass, as step 3 promises.
//
// E2E_KEEP=1 keeps the temp directory for inspection.
import assert from "node:assert/strict";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { after, before, describe, test } from "node:test";
import { assertOk, MINUTE, ROOT, run } from "./support.js";

const SAMPLE_RPCS = ["Echo", "Countdown", "Fail", "Sum", "Chat"];
const SAMPLE_MESSAGES = SAMPLE_RPCS.flatMap((r) => [`${r}Request`, `${r}Response`]);

let work = "";
let tarball = "";
let repo = "";

/** Removes the block that starts at the line `start` matches (with the comment lines just above it), braces balanced. */
function removeBlock(lines: string[], start: RegExp): string[] {
  const first = lines.findIndex((l) => start.test(l));
  assert.ok(first >= 0, `found ${start}`);
  let from = first;
  while (from > 0 && /^\s*\/\//.test(lines[from - 1] as string)) from--;
  let depth = 0;
  let to = first;
  for (; to < lines.length; to++) {
    for (const c of (lines[to] as string).replace(/"(?:[^"\\]|\\.)*"/g, '""')) {
      if (c === "{" || c === "[" || c === "(") depth++;
      if (c === "}" || c === "]" || c === ")") depth--;
    }
    if (depth <= 0 && /[})\]],?\s*$|\{\}\s*$/.test(lines[to] as string)) break;
  }
  return [...lines.slice(0, from), ...lines.slice(to + 1)];
}

/** Import lines whose names the rest of the file no longer uses, dropped (the README: "and the imports they leave unused"). */
function dropUnusedImports(text: string): string {
  const lines = text.split("\n");
  const body = lines.filter((l) => !l.startsWith("import ")).join("\n");
  return lines
    .flatMap((l) => {
      const m = /^import (type )?\{([^}]*)\} from (.*)$/.exec(l);
      if (!m) return [l];
      const kept = (m[2] as string)
        .split(",")
        .map((s) => s.trim())
        .filter((s) => s !== "" && new RegExp(`\\b${s.split(/\s+as\s+/).pop()?.replace(/^type\s+/, "")}\\b`).test(body));
      return kept.length === 0 ? [] : [`import ${m[1] ?? ""}{ ${kept.join(", ")} } from ${m[3]}`];
    })
    .join("\n");
}

before(async () => {
  work = fs.mkdtempSync(path.join(os.tmpdir(), "create-grpc-svc-replace-"));
  const packDir = path.join(work, "pack");
  fs.mkdirSync(packDir);
  assertOk(await run("npm", ["pack", "--pack-destination", packDir], ROOT, 5 * MINUTE), "npm pack"); // prepack: build + protos
  tarball = path.join(packDir, fs.readdirSync(packDir).find((f) => f.endsWith(".tgz")) as string);
});

after(() => {
  if (work && !process.env.E2E_KEEP) fs.rmSync(work, { recursive: true, force: true });
  else if (work) console.log(`# kept ${work}`);
});

describe("replacing the sample API as the README says", () => {
  test("shop-svc is generated and installed", { timeout: 10 * MINUTE }, async () => {
    const gen = await run("npm", ["exec", "--yes", `--package=${tarball}`, "--", "create-grpc-svc", "shop-svc", "--yes", "--no-git"], work, 10 * MINUTE);
    assertOk(gen, "create-grpc-svc shop-svc");
    repo = path.join(work, "shop-svc");
  });

  test("step 1: the README's make new-rpc commands, as written", { timeout: 5 * MINUTE }, async () => {
    const readme = fs.readFileSync(path.join(repo, "README.md"), "utf8");
    const section = readme.split(/^## /m).find((s) => s.startsWith("Replacing the sample API"));
    assert.ok(section, "the README has the section");
    const commands = (/```sh\n([\s\S]*?)```/.exec(section)?.[1] ?? "").split("\n").map((l) => l.trim()).filter((l) => l.startsWith("make new-rpc"));
    assert.ok(commands.length >= 2 && commands.every((c) => c.includes("SERVICE=shop ")), commands.join("\n"));
    for (const command of commands) assertOk(await run("sh", ["-c", command], repo, 3 * MINUTE), command);
  });

  test("step 2: the sample's RPCs, messages, handlers, worker, unused imports and tests are deleted", () => {
    const protoPath = path.join(repo, "proto/shop/v1/shop.proto");
    let proto = fs.readFileSync(protoPath, "utf8").split("\n");
    for (const rpc of SAMPLE_RPCS) proto = removeBlock(proto, new RegExp(`^\\s*rpc ${rpc}\\(`));
    for (const message of SAMPLE_MESSAGES) proto = removeBlock(proto, new RegExp(`^message ${message} \\{`));
    let protoText = proto.join("\n");
    // "keep the imports your RPCs use": drop each import whose package the file no longer names.
    for (const [file, used] of [
      ["google/protobuf/timestamp.proto", /google\.protobuf\.Timestamp/],
      ["grpcsvc/v1/options.proto", /grpcsvc\.v1\./],
      ["buf/validate/validate.proto", /buf\.validate\./],
    ] as const) {
      if (!used.test(protoText)) protoText = protoText.replace(`import "${file}";\n`, "");
    }
    fs.writeFileSync(protoPath, protoText);
    assert.doesNotMatch(protoText, /rpc (Echo|Countdown|Fail|Sum|Chat)\(|message (Echo|Chat)Request/);
    assert.match(protoText, /rpc GetOrder\(/);

    const sourcePath = path.join(repo, "src/service/shop-service.ts");
    let source = fs.readFileSync(sourcePath, "utf8").split("\n");
    for (const handler of SAMPLE_RPCS.map((r) => r[0]?.toLowerCase() + r.slice(1))) source = removeBlock(source, new RegExp(`^\\s*async \\*?${handler}\\(`));
    source = removeBlock(source, /^\s*workers: \[/);
    fs.writeFileSync(sourcePath, dropUnusedImports(source.join("\n")));
    for (const rel of ["test/shop-service.test.ts", "test/shop-streams.test.ts"]) fs.rmSync(path.join(repo, rel));
    fs.writeFileSync(path.join(repo, "scripts/bench-requests.json"), "{}\n");
  });

  test("step 3: make generate, make lint and make test pass", { timeout: 15 * MINUTE }, async (t) => {
    const generate = await run("make", ["generate"], repo, 5 * MINUTE);
    assertOk(generate, "make generate");
    // What step 3 says tidies the formatting the deletions leave.
    assertOk(await run("npx", ["oxfmt", "src", "test"], repo, MINUTE), "npx oxfmt src test");
    const lint = await run("make", ["lint"], repo, 5 * MINUTE);
    assertOk(lint, "make lint");
    const tests = await run("make", ["test"], repo, 10 * MINUTE);
    assertOk(tests, "make test");
    assert.match(tests.output, /GetOrder/);
    t.diagnostic(`make lint ${lint.ms} ms, make test ${tests.ms} ms`);
  });
});
