// The template's user-facing docs stay true to the code: .env.example and the README's configuration table
// list exactly the settings of the config schema, the README keeps the markers the generator relies on, and
// no template file uses the word "example" in prose (the generator would rename it to the service's stem).
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import fs from "node:fs";
import path from "node:path";
import { test } from "node:test";
import { fileURLToPath } from "node:url";
import { listTemplateFiles } from "../generator/render.js";
import { withToc } from "../scripts/readme-toc.js";
import { configTable, envExample, groupedSettings } from "../template/scripts/config-docs.js";
import { settings } from "../template/src/framework/config/schema.js";

const template = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../template");
const read = (rel: string) => fs.readFileSync(path.join(template, rel), "utf8");
const names = Object.keys(settings).sort();
const REGENERATE = "run `make config-docs` in template/ to regenerate it";

/** `NAME=` lines, commented or not. */
function envFileNames(text: string): string[] {
  return [...text.matchAll(/^#?[ \t]*([A-Z][A-Z0-9_]*)=/gm)].map((m) => m[1] as string).sort();
}

/** First-column names of the README table under "## Configuration". */
function readmeTableNames(readme: string): string[] {
  const section = readme.split(/^## /m).find((s) => s.startsWith("Configuration"));
  assert.ok(section, "README.md has a '## Configuration' section");
  return [...section.matchAll(/^\| `([A-Z][A-Z0-9_]*)` \|/gm)].map((m) => m[1] as string).sort();
}

test(".env.example lists every setting, and nothing else", () => {
  assert.deepEqual(envFileNames(read(".env.example")), names);
});

test(".env.example is exactly what scripts/config-docs.ts prints", () => {
  assert.equal(read(".env.example"), envExample(), `.env.example is stale: ${REGENERATE}`);
});

test("every setting has a heading of its own in scripts/config-docs.ts, none falls under \"Other\"", () => {
  // A new setting left out of the groups lands at the end of .env.example, away from its neighbours
  // (JWT_REQUIRE_EXP once sat under "Other", far from JWT_SECRET).
  const other = groupedSettings().find(([heading]) => heading === "Other");
  assert.equal(other, undefined, `add ${other?.[1].join(", ")} to a group in template/scripts/config-docs.ts`);
});

test("a test file the README names next to a make target is one that target runs", () => {
  // After the test split, the README said `make test` replays the Dockerfile while that test had moved to
  // test/framework/ (make test-framework). Scope of each target: package.json's test scripts.
  const scope: Record<string, (file: string) => boolean> = {
    test: (f) => !/^(src\/framework|test\/framework|test\/system)\//.test(f),
    "test-framework": (f) => /^(src\/framework|test\/framework)\//.test(f),
    "test-system": (f) => f.startsWith("test/system/"),
  };
  // Table rows are units of their own; otherwise a paragraph.
  const units = read("README.md")
    .split(/\n\s*\n/)
    .flatMap((para) => (para.startsWith("|") ? para.split("\n") : [para]));
  const wrong: string[] = [];
  for (const unit of units) {
    const targets = new Set([...unit.matchAll(/`make (test(?:-framework|-system)?)`/g)].map((m) => m[1] as string));
    if (targets.size !== 1) continue;
    const [target] = [...targets] as [string];
    for (const [, file] of unit.matchAll(/`((?:src|test)\/[^`*]*\.test\.ts)`/g)) {
      if (!fs.existsSync(path.join(template, file as string))) wrong.push(`${file} does not exist`);
      else if (!scope[target]?.(file as string)) wrong.push(`${file} is not run by make ${target}`);
    }
  }
  assert.deepEqual(wrong, []);
});

test(".env.example leaves every secret empty", () => {
  const text = read(".env.example");
  for (const [name, s] of Object.entries(settings)) {
    if ((s as { secret?: boolean }).secret) assert.match(text, new RegExp(`^# ${name}=$`, "m"), name);
  }
});

test("the README's configuration table lists every setting, and nothing else", () => {
  assert.deepEqual(readmeTableNames(read("README.md")), names);
});

test("the README's configuration table is exactly what scripts/config-docs.ts prints", () => {
  assert.ok(read("README.md").includes(configTable()), `the table in README.md is stale: ${REGENERATE}`);
});

test("the README starts with the service's name and has one choices block for the generator", () => {
  const readme = read("README.md");
  assert.equal(readme.split("\n")[0], "# example");
  const start = readme.split("\n").filter((l) => l.trim() === "<!-- create-grpc-svc:choices -->");
  const end = readme.split("\n").filter((l) => l.trim() === "<!-- /create-grpc-svc:choices -->");
  assert.equal(start.length, 1);
  assert.equal(end.length, 1);
  assert.ok(readme.indexOf(start[0] as string) < readme.indexOf(end[0] as string));
});

test("make help lists the documented targets", () => {
  const out = execFileSync("make", ["-s", "help"], { cwd: template, encoding: "utf8" });
  for (const target of ["run", "dev", "test", "generate", "lint", "build", "start", "bench", "docker"]) {
    assert.match(out, new RegExp(`^\\s+${target}\\s`, "m"), target);
  }
});

// The generator renames every `example` token, so "for example" in a comment would come out as "for demo".
const PROSE = /\b(?:for|an|the|this|that|as|see|like|one|another|simple|following)\s+example\b|\bexamples\b|\bexample\s+(?:of|shows|below|above|usage)\b/i;
const SKIP = new Set(["node_modules", "dist", "coverage", ".tmp", "package-lock.json"]);
const VERBATIM = ["src/gen", "proto/google", "proto/grpc", "proto/buf"]; // generated or third-party, never renamed

function templateTextFiles(rel = ""): string[] {
  return fs.readdirSync(path.join(template, rel), { withFileTypes: true }).flatMap((e) => {
    const child = rel ? `${rel}/${e.name}` : e.name;
    if (SKIP.has(e.name) || VERBATIM.includes(child) || /^dist-[^/]*$/.test(child)) return [];
    if (e.isDirectory()) return templateTextFiles(child);
    return e.isFile() ? [child] : [];
  });
}

test('no template file says "example" in prose', () => {
  const offenders = templateTextFiles().flatMap((rel) =>
    read(rel)
      .split("\n")
      .flatMap((line, i) => (PROSE.test(line) ? [`${rel}:${i + 1}: ${line.trim()}`] : [])),
  );
  assert.deepEqual(offenders, [], 'write "e.g." or "for instance" instead');
});

test("the README's table of contents lists every section, linked (node --import tsx scripts/readme-toc.ts --write)", () => {
  const readme = read("README.md");
  assert.equal(readme, withToc(readme), "the table of contents is stale: run node --import tsx scripts/readme-toc.ts --write");
});

test('no file the generator ships cites "SPEC §" (users do not have that document)', () => {
  const offenders = listTemplateFiles(template)
    .filter((rel) => !VERBATIM.some((v) => rel.startsWith(`${v}/`)))
    .flatMap((rel) =>
      read(rel)
        .split("\n")
        .flatMap((line, i) => (/\bSPEC\s*§/.test(line) ? [`${rel}:${i + 1}: ${line.trim()}`] : [])),
    );
  assert.deepEqual(offenders, []);
});
