// The generated README and its docs/ pages are the user's manual: every ```ts block in template/README.md and
// template/docs/*.md is type-checked against the
// real framework with the template's own tsc and tsconfig, so a wrong name (`Code.NotFound` for
// `Code.NOT_FOUND`) cannot ship again. Each block is compiled as a module where its imports point
// (`../framework/…` → src/service/, `./framework/…` → src/), with:
// - the framework and example names it uses but does not import, imported for it (the README shows the lines
//   that matter, not every import);
// - blocks of object members (`async echo(request, ctx) {…}`, `async preStart(app) {…}`) wrapped in the object
//   they belong to: the service's handlers, or its lifecycle hooks;
// - the few placeholders the README leaves to the reader declared below.
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { after, test } from "node:test";
import { fileURLToPath } from "node:url";

const template = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../template");
/** The manual's pages, relative to the template: README.md, then docs/*.md. */
const pages = ["README.md", ...fs.readdirSync(path.join(template, "docs")).filter((f) => f.endsWith(".md")).sort().map((f) => `docs/${f}`)];
const texts = new Map(pages.map((p) => [p, fs.readFileSync(path.join(template, p), "utf8")]));

const PLACEHOLDERS = `declare global {
  const token: string;
  function consumeOne(signal: AbortSignal): Promise<void>;
  function refreshCache(signal: AbortSignal): Promise<void>;
}
export {};
`;
const HOOKS = new Set(["preStart", "postStart", "preStop", "failCheck", "stop", "postStop", "authorize"]);

interface Snippet {
  page: string;
  line: number;
  code: string;
}

function snippets(page: string, markdown: string): Snippet[] {
  const out: Snippet[] = [];
  const re = /^```ts\n([\s\S]*?)^```$/gm;
  for (let m = re.exec(markdown); m; m = re.exec(markdown)) {
    // A consumer's script importing the SDK package (docs/consumers.md) is compiled against the packed SDK by
    // test/system/sdk.test.ts; against the service's sources it has nothing to resolve.
    if (/from "example-client[/"]/.test(m[1] as string)) continue;
    out.push({ page, line: markdown.slice(0, m.index).split("\n").length + 1, code: m[1] as string });
  }
  return out;
}

const allSnippets = () => [...texts].flatMap(([page, text]) => snippets(page, text));

/** Names src/framework/index.ts exports, and whether each is a type only. */
function frameworkExports(): Map<string, boolean> {
  const index = fs.readFileSync(path.join(template, "src/framework/index.ts"), "utf8");
  const names = new Map<string, boolean>();
  for (const m of index.matchAll(/export (type )?\{([^}]*)\}/g)) {
    for (const entry of (m[2] as string).split(",").map((s) => s.trim()).filter(Boolean)) {
      const typeOnly = m[1] !== undefined || entry.startsWith("type ");
      names.set(entry.replace(/^type\s+/, ""), typeOnly);
    }
  }
  return names;
}

function importedNames(code: string): Set<string> {
  const names = new Set<string>();
  for (const m of code.matchAll(/^import (?:type )?\{([^}]*)\}/gm)) {
    for (const entry of (m[1] as string).split(",")) {
      const name = entry.trim().replace(/^type\s+/, "").split(/\s+as\s+/).pop();
      if (name) names.add(name);
    }
  }
  return names;
}

/** The module text to compile for one README block, and where (relative to src/) it goes. */
function moduleFor(s: Snippet, n: number, fw: Map<string, boolean>): { rel: string; text: string } {
  const inSrc = /from "\.\/(framework|gen)\//.test(s.code);
  const up = inSrc ? "./" : "../";
  const imports = s.code.split("\n").filter((l) => l.startsWith("import "));
  const body = s.code
    .split("\n")
    .filter((l) => !l.startsWith("import "))
    .join("\n");
  const taken = importedNames(s.code);
  // A name, not a property (`x.name`); a spread (`...name`) counts.
  const uses = (name: string) => new RegExp(`(?<![\\w$])(?<![^.]\\.)${name}(?![\\w$])`).test(body);
  const members = [...body.matchAll(/^(?:async\s+)?\*?\s*(\w+)\s*\(/gm)].map((m) => m[1] as string);
  const fragment = /^\s*(?:\/\/.*\n\s*)*(?:async\s+)?\*?\s*\w+\s*\([^)\n]*\)\s*\{/.test(body);
  let wrapped = body;
  const need = new Set<string>();
  if (fragment) {
    const hooks = members.some((m) => HOOKS.has(m));
    need.add(hooks ? "LifecycleHooks" : "ServiceHandlers").add("ExampleService");
    wrapped = hooks
      ? `export const readmeHooks: LifecycleHooks = {\n${body}\n};\n`
      : `export const readmeHandlers: Partial<ServiceHandlers<typeof ExampleService>> = {\n${body}\n};\n`;
  }
  for (const name of fw.keys()) if (uses(name) && !taken.has(name)) need.add(name);
  if (uses("ExampleService") && !taken.has("ExampleService")) need.add("ExampleService");
  const prelude: string[] = [];
  const values = [...need].filter((x) => fw.has(x) && !fw.get(x));
  const types = [...need].filter((x) => fw.get(x));
  if (values.length > 0) prelude.push(`import { ${values.join(", ")} } from "${up}framework/index.js";`);
  if (types.length > 0) prelude.push(`import type { ${types.join(", ")} } from "${up}framework/index.js";`);
  if (need.has("ExampleService")) prelude.push(`import { ExampleService } from "${up}gen/example/v1/example_pb.js";`);
  const text = `// ${s.page} line ${s.line}\n${[...prelude, ...imports].join("\n")}\n${wrapped}\nexport {};\n`;
  return { rel: inSrc ? `readme-${n}.ts` : `service/readme-${n}.ts`, text };
}

const work = fs.mkdtempSync(path.join(os.tmpdir(), "readme-snippets-"));
after(() => fs.rmSync(work, { recursive: true, force: true }));

test("README.md and docs/ have TypeScript blocks to check", () => {
  assert.ok(allSnippets().length >= 8);
});

test("every ```ts block in the template README and docs/ type-checks against the framework", { timeout: 120_000 }, () => {
  // A tree that resolves like the template's: src/framework and src/gen and node_modules are the real ones.
  fs.mkdirSync(path.join(work, "src/service"), { recursive: true });
  for (const rel of ["src/framework", "src/gen", "node_modules"]) fs.symlinkSync(path.join(template, rel), path.join(work, rel));
  const fw = frameworkExports();
  const files = allSnippets().map((s, i) => {
    const { rel, text } = moduleFor(s, i + 1, fw);
    fs.writeFileSync(path.join(work, "src", rel), text);
    return `src/${rel}`;
  });
  fs.writeFileSync(path.join(work, "placeholders.d.ts"), PLACEHOLDERS);
  fs.writeFileSync(path.join(work, "package.json"), '{ "type": "module" }\n');
  fs.writeFileSync(
    path.join(work, "tsconfig.json"),
    JSON.stringify({
      extends: path.join(template, "tsconfig.json"),
      // Illustrations may leave a variable or parameter unused.
      compilerOptions: { noUnusedLocals: false, noUnusedParameters: false, noEmit: true, rootDir: "/" },
      include: [],
      files: ["placeholders.d.ts", ...files],
    }),
  );
  const tsc = path.join(template, "node_modules/.bin/tsc");
  const r = spawnSync(tsc, ["-p", "tsconfig.json", "--pretty", "false"], { cwd: work, encoding: "utf8" });
  const report = `${r.stdout}${r.stderr}`
    .split("\n")
    .filter(Boolean)
    .map((l) => {
      const m = /^src\/(?:service\/)?readme-(\d+)\.ts\((\d+),/.exec(l);
      if (!m) return l;
      const text = fs.readFileSync(path.join(work, "src", l.slice(4, l.indexOf("("))), "utf8");
      const where = /^\/\/ (\S+) line (\d+)/.exec(text);
      return `${where?.[1]} block at line ${where?.[2]}: ${l}\n  ${text.split("\n")[Number(m[2]) - 1]?.trim()}`;
    });
  assert.equal(r.status, 0, report.join("\n"));
});

test("every Code.NAME the README and docs/ mention, in code blocks or prose, is a real status code", async () => {
  const { Code } = await import("../template/src/framework/call/status.js");
  const all = [...texts.values()].join("\n");
  const mentioned = [...new Set([...all.matchAll(/\bCode\.([A-Za-z_]+)/g)].map((m) => m[1] as string))];
  assert.ok(mentioned.length > 0);
  assert.deepEqual(
    mentioned.filter((name) => !(name in Code)),
    [],
  );
});
