// The template's user-facing docs stay true to the code: .env.example and docs/configuration.md's table list
// exactly the settings of the config schema, the README keeps the markers the generator relies on, every
// relative link of the README and docs/ resolves, and no template file uses the word "example" in prose (the
// generator would rename it to the service's stem).
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import fs from "node:fs";
import path from "node:path";
import { test } from "node:test";
import { fileURLToPath } from "node:url";
import { listTemplateFiles } from "../generator/render.js";
import { headingAnchors, tocFiles, withToc } from "../scripts/readme-toc.js";
import { CONFIG_PAGE, configTable, envExample, groupedSettings } from "../template/scripts/config-docs.js";
import { settings } from "../template/src/framework/config/schema.js";

const template = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../template");
const read = (rel: string) => fs.readFileSync(path.join(template, rel), "utf8");
const names = Object.keys(settings).sort();
const REGENERATE = "run `make config-docs` in template/ to regenerate it";
/** The manual: README.md and the docs/ pages. */
const pages = ["README.md", ...fs.readdirSync(path.join(template, "docs")).filter((f) => f.endsWith(".md")).sort().map((f) => `docs/${f}`)];

/** `NAME=` lines, commented or not. */
function envFileNames(text: string): string[] {
  return [...text.matchAll(/^#?[ \t]*([A-Z][A-Z0-9_]*)=/gm)].map((m) => m[1] as string).sort();
}

/** First-column names of the configuration page's settings table (the one scripts/config-docs.ts writes). */
function configTableNames(page: string): string[] {
  const table = page.slice(page.indexOf("| Variable | Default | Meaning |")).split(/\n(?!\|)/)[0] as string;
  return [...table.matchAll(/^\| `([A-Z][A-Z0-9_]*)` \|/gm)].map((m) => m[1] as string).sort();
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
  const units = pages
    .map(read)
    .join("\n\n")
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

test("the configuration table of docs/configuration.md lists every setting, and nothing else", () => {
  assert.equal(CONFIG_PAGE, "docs/configuration.md");
  assert.deepEqual(configTableNames(read(CONFIG_PAGE)), names);
});

test("the configuration table of docs/configuration.md is exactly what scripts/config-docs.ts prints", () => {
  assert.ok(read(CONFIG_PAGE).includes(configTable()), `the table in ${CONFIG_PAGE} is stale: ${REGENERATE}`);
});

test("the README stays a short manual (at most 400 lines) that links every docs/ page", () => {
  const readme = read("README.md");
  assert.ok(readme.split("\n").length <= 400, `README.md has ${readme.split("\n").length} lines`);
  for (const page of pages.slice(1)) assert.ok(readme.includes(`](${page})`), `README.md links ${page}`);
});

/** Markdown links `[text](target)` outside fenced code blocks, with their line numbers. */
function links(markdown: string): { line: number; target: string }[] {
  const out: { line: number; target: string }[] = [];
  let fenced = false;
  markdown.split("\n").forEach((line, i) => {
    if (/^\s*(```|~~~)/.test(line)) fenced = !fenced;
    if (fenced) return;
    const prose = line.replace(/`[^`]*`/g, ""); // code spans are not links
    for (const m of prose.matchAll(/\]\(([^)\s]+)\)/g)) out.push({ line: i + 1, target: m[1] as string });
  });
  return out;
}

test("every relative link in README.md and docs/*.md names a file that exists and a heading it has", () => {
  const broken: string[] = [];
  let checked = 0;
  for (const page of pages) {
    for (const { line, target } of links(read(page))) {
      if (/^[a-z][a-z0-9+.-]*:/i.test(target)) continue; // https:, mailto:
      checked++;
      const [file = "", anchor] = target.split("#");
      const rel = file === "" ? page : path.posix.normalize(path.posix.join(path.posix.dirname(page), file));
      const where = `${page}:${line}: ${target}`;
      if (rel.startsWith("../") || !fs.existsSync(path.join(template, rel))) broken.push(`${where} (no file ${rel})`);
      else if (anchor !== undefined && !(rel.endsWith(".md") && headingAnchors(read(rel)).has(anchor)))
        broken.push(`${where} (no heading #${anchor} in ${rel})`);
    }
  }
  assert.ok(checked >= 20, `only ${checked} relative links found`);
  assert.deepEqual(broken, []);
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
const SKIP = new Set(["node_modules", "dist", "coverage", ".tmp", "package-lock.json", "sdk"]); // sdk/: make sdk's build output
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

test("the tables of contents of the README and docs/ list every section, linked (node --import tsx scripts/readme-toc.ts --write)", () => {
  const files = tocFiles(template);
  assert.ok(files.includes("README.md"));
  for (const rel of files) {
    const text = read(rel);
    assert.equal(text, withToc(text), `the table of contents of ${rel} is stale: run node --import tsx scripts/readme-toc.ts --write`);
  }
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

test("package.json's allowScripts decides every dependency install script of the lockfile, so npm 11 lists none after install", () => {
  // npm 11 skips the scripts allowScripts does not cover and ends every install with a warning listing them.
  const lock = JSON.parse(read("package-lock.json")) as { packages: Record<string, { hasInstallScript?: boolean }> };
  // "" is the repo itself: its own postinstall (package.json's "//" says why) runs as the repo's script, not a dependency's.
  const withScripts = [
    ...new Set(Object.entries(lock.packages).flatMap(([key, p]) => (p.hasInstallScript && key !== "" ? [key.split("node_modules/").pop() as string] : []))),
  ].sort();
  const pkg = JSON.parse(read("package.json")) as { allowScripts?: Record<string, boolean> };
  assert.ok(withScripts.length > 0);
  assert.deepEqual(withScripts.filter((name) => !(name in (pkg.allowScripts ?? {}))), [], "add them to allowScripts (false: not needed)");
  assert.match(read("README.md"), /No dependency's install script runs, and none needs to/);
});
