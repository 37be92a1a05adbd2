import { existsSync, readFileSync, readdirSync, statSync } from "node:fs";
import { join, posix, sep } from "node:path";
import { fileURLToPath } from "node:url";
/**
 * The framework's layers, checked by `make lint` (`npm run lint:layers`, this script). Bottom to top:
 *   1. call/                                      the call model: imports no other framework folder
 *   2. config/ logging/ tracing/ errors/ metrics/ codec/ overload/  cross-cutting helpers: the call model and each other
 *   3. interceptors/ auth/                         functions over the call model
 *   4. server/ gateway/ browser/ health/ client/ docs/ profiling/ admin/ workers/   transports and routes
 *   5. lifecycle/ testing/ index.ts               the composition root: assembles the rest, nothing imports it
 * A folder imports only from folders below it, or beside it in layer 4 (gateway uses server; browser uses
 * gateway; admin mounts docs, metrics and profiling), and no two folders ever import each other, however
 * indirectly: a cycle between folders fails even when no file imports itself round the loop.
 *
 * Every import counts: `import`, `import type`, `export ... from`, `import("...")` (in code and in types),
 * `require("...")` (an `import()` of a computed name names no file, and is not checked). Test files and src/gen/
 * are left out. A relative import this script cannot resolve to a file
 * fails too, so a form it misreads cannot hide a violation.
 *
 * Why a script: dependency-cruiser did this with 18 MB of node_modules (itself, and @swc/core to parse
 * TypeScript, as TypeScript 7's package has no compiler API); oxlint's no-restricted-imports matches specifier
 * text rather than the file it resolves to, skips `import()`, and has no cycle check. The imports come from
 * @babel/parser, a real TypeScript parser that is here already for the generators (generators/source-edit.ts),
 * so the check costs no install size and reads no import by regex.
 *
 * Usage: node --import tsx scripts/layers.ts [root]   (root: the repository, default the current directory)
 */
import { parse } from "@babel/parser";
import type * as t from "@babel/types";

const FW = "^src/framework/";
const HELPERS = `${FW}(config|logging|tracing|errors|metrics|codec|overload)/`;
const ABOVE_HELPERS = `${FW}(interceptors|auth|server|gateway|browser|admin|docs|health|profiling|client|workers|lifecycle|testing)/`;
const TRANSPORTS = `${FW}(server|gateway|browser|admin|docs|health|profiling|client)/`;
const ROOT = `${FW}(lifecycle|testing)/|${FW}index\\.ts$`;

/** An import from a file matching `from` (and not `fromNot`) of a file matching `to` (and not `toNot`) fails. */
interface Rule {
  name: string;
  comment: string;
  from: RegExp;
  fromNot?: RegExp;
  to: RegExp;
  toNot?: RegExp;
}

export const RULES: Rule[] = [
  {
    name: "call-model-imports-no-framework-folder",
    comment: "call/ is the bottom layer: it may import only itself and packages.",
    from: new RegExp(`${FW}call/`),
    to: new RegExp(FW),
    toNot: new RegExp(`${FW}call/`),
  },
  {
    name: "helpers-import-only-the-call-model",
    comment:
      "config, logging, tracing, errors, metrics, codec and overload are helpers (layer 2): they import the call model and each other only.",
    from: new RegExp(HELPERS),
    to: new RegExp(ABOVE_HELPERS),
  },
  {
    name: "interceptors-and-auth-below-the-transports",
    comment:
      "Interceptors and auth (layer 3) are functions over the call model; transports and the composition root use them, not the reverse.",
    from: new RegExp(`${FW}(interceptors|auth)/`),
    to: new RegExp(`${TRANSPORTS}|${ROOT}`),
  },
  {
    name: "only-the-root-assembles",
    comment: "Nothing imports the composition root (lifecycle/, testing/, index.ts) but the root itself.",
    from: new RegExp(FW),
    fromNot: new RegExp(ROOT),
    to: new RegExp(ROOT),
  },
];

/** A folder (a file's directory, as dependency-cruiser's folder scope had it) matching `from` on a cycle of folders fails. */
export const CYCLE_RULE = {
  name: "no-cycle-between-framework-folders",
  comment:
    "Two framework folders that import each other, directly or through others, are one concern in two places: move the shared piece down a layer.",
  from: new RegExp(`${FW}[^/]+`),
};

const EXCLUDE = [/^src\/gen\//, /\.test\.ts$/];
const CODE = /\.(ts|mts|cts|js|mjs|cjs)$/;

/** The module specifiers a file imports, in source order. */
export function importsOf(source: string, file: string): string[] {
  const ast = parse(source, { sourceType: "module", plugins: ["typescript"], sourceFilename: file });
  const found: string[] = [];
  const literal = (node: t.Node | null | undefined): string | undefined => {
    if (node?.type === "StringLiteral") return node.value;
    // `import(\`./x.js\`)`: a template without placeholders is a literal too.
    if (node?.type === "TemplateLiteral" && node.expressions.length === 0) return node.quasis[0]?.value.cooked ?? undefined;
    return undefined;
  };
  const visit = (node: t.Node): void => {
    switch (node.type) {
      case "ImportDeclaration": // `import type` and `import { type X }` included
      case "ExportAllDeclaration":
      case "ExportNamedDeclaration": // `export type { X } from` included
        if (node.source) found.push(node.source.value);
        break;
      case "TSImportEqualsDeclaration": // import x = require("...")
        if (node.moduleReference.type === "TSExternalModuleReference") found.push(node.moduleReference.expression.value);
        break;
      case "TSImportType": {
        // `type T = import("./x.js").T`: Babel 7 gives a string literal, Babel 8 a literal type around it.
        const argument = node.argument as t.Node;
        const specifier = literal(argument.type === "TSLiteralType" ? (argument.literal as t.Node) : argument);
        if (specifier !== undefined) found.push(specifier);
        break;
      }
      case "ImportExpression": {
        const specifier = literal(node.source);
        if (specifier !== undefined) found.push(specifier);
        break;
      }
      case "CallExpression":
        if (node.callee.type === "Import" || (node.callee.type === "Identifier" && node.callee.name === "require")) {
          const specifier = literal(node.arguments[0] as t.Node | undefined);
          if (specifier !== undefined) found.push(specifier);
        }
        break;
    }
    for (const key of Object.keys(node)) {
      if (key === "loc" || key.endsWith("Comments") || key === "extra") continue;
      const value = (node as unknown as Record<string, unknown>)[key];
      if (Array.isArray(value)) {
        for (const child of value) if (isNode(child)) visit(child);
      } else if (isNode(value)) visit(value);
    }
  };
  visit(ast.program);
  return found;
}

function isNode(value: unknown): value is t.Node {
  return typeof value === "object" && value !== null && typeof (value as { type?: unknown }).type === "string";
}

/**
 * The file (relative to root, with /) a relative specifier names, the way TypeScript's NodeNext resolution finds
 * it: the path itself, `.js` written for `.ts`, or a directory's index. undefined when none exists.
 */
function resolveRelative(root: string, from: string, specifier: string): string | undefined {
  const base = posix.join(posix.dirname(from), specifier);
  const candidates = [base];
  const swapped = base.replace(/\.(m|c)?js$/, ".$1ts");
  if (swapped !== base) candidates.push(swapped);
  candidates.push(`${base}.ts`, `${base}.js`, `${base}/index.ts`, `${base}/index.js`);
  return candidates.find((c) => {
    const path = join(root, c);
    return existsSync(path) && statSync(path).isFile();
  });
}

export interface Violation {
  rule: string;
  /** `from → to` for an import, `folder → … → folder` for a cycle, with the imports that make each step. */
  text: string;
}

export interface LayerReport {
  violations: Violation[];
  modules: number;
  dependencies: number;
}

/** Checks every module under root's src/ (and the local files they import) against the rules. */
export function checkLayers(root: string): LayerReport {
  const violations: Violation[] = [];
  const excluded = (path: string) => EXCLUDE.some((re) => re.test(path));
  const queue = readdirSync(join(root, "src"), { recursive: true, encoding: "utf8" })
    .map((p) => posix.join("src", p.split(sep).join("/")))
    .filter((p) => CODE.test(p) && !excluded(p) && statSync(join(root, p)).isFile())
    .sort();
  const seen = new Set(queue);
  /** Local imports: from file → to file. */
  const edges: [string, string][] = [];
  let dependencies = 0;
  for (let i = 0; i < queue.length; i++) {
    const file = queue[i]!;
    if (!CODE.test(file)) continue;
    let specifiers: string[];
    try {
      specifiers = importsOf(readFileSync(join(root, file), "utf8"), file);
    } catch (err) {
      violations.push({ rule: "parse-error", text: `${file}: ${(err as Error).message}` });
      continue;
    }
    dependencies += specifiers.length;
    for (const specifier of specifiers) {
      if (!specifier.startsWith("./") && !specifier.startsWith("../")) continue; // a package or node: builtin
      // src/gen/ is left out (it may not be generated yet): an import of it is not followed.
      if (excluded(posix.join(posix.dirname(file), specifier))) continue;
      const to = resolveRelative(root, file, specifier);
      if (to === undefined) {
        violations.push({ rule: "unresolvable-import", text: `${file} → ${specifier}` });
        continue;
      }
      if (excluded(to) || to.split("/").includes("node_modules")) continue;
      edges.push([file, to]);
      if (!seen.has(to)) {
        seen.add(to);
        queue.push(to); // a local file outside src/ that src/ imports: its imports count too
      }
    }
  }

  for (const rule of RULES) {
    for (const [from, to] of edges) {
      if (rule.from.test(from) && !rule.fromNot?.test(from) && rule.to.test(to) && !rule.toNot?.test(to)) {
        violations.push({ rule: rule.name, text: `${from} → ${to}` });
      }
    }
  }
  violations.push(...folderCycles(edges));
  return { violations, modules: seen.size, dependencies };
}

/** For each folder matching CYCLE_RULE.from that some cycle of folders runs through: its shortest such cycle. */
function folderCycles(edges: [string, string][]): Violation[] {
  const next = new Map<string, Set<string>>();
  /** "a\0b" → the file imports that make folder a import folder b. */
  const because = new Map<string, string[]>();
  for (const [from, to] of edges) {
    const a = posix.dirname(from);
    const b = posix.dirname(to);
    if (a === b) continue;
    if (!next.has(a)) next.set(a, new Set());
    next.get(a)!.add(b);
    const key = `${a}\0${b}`;
    because.set(key, [...(because.get(key) ?? []), `${from} → ${to}`]);
  }
  const violations: Violation[] = [];
  for (const start of [...next.keys()].sort()) {
    if (!CYCLE_RULE.from.test(start)) continue;
    // Breadth first from the folder's own imports back to it: the shortest cycle through it.
    const parent = new Map<string, string>();
    const frontier = [start];
    while (frontier.length > 0 && !parent.has(start)) {
      const folder = frontier.shift()!;
      for (const n of [...(next.get(folder) ?? [])].sort()) {
        if (parent.has(n)) continue;
        parent.set(n, folder);
        frontier.push(n);
      }
    }
    if (!parent.has(start)) continue;
    const cycle = [start];
    for (let f = parent.get(start)!; f !== start; f = parent.get(f)!) cycle.unshift(f);
    cycle.unshift(start);
    const steps = cycle.slice(1).map((to, i) => because.get(`${cycle[i]}\0${to}`)!.join(", "));
    violations.push({ rule: CYCLE_RULE.name, text: `${cycle.join(" → ")}\n${steps.map((s) => `      ${s}`).join("\n")}` });
  }
  return violations;
}

/** The report `make lint` prints: one line per violation, then what each broken rule is for. */
export function formatReport({ violations, modules, dependencies }: LayerReport): string {
  const counted = `${modules} modules, ${dependencies} dependencies checked`;
  if (violations.length === 0) return `✔ no layer violations found (${counted})\n`;
  const lines = violations.map((v) => `  error ${v.rule}: ${v.text}`);
  const broken = new Set(violations.map((v) => v.rule));
  const why = [...RULES, CYCLE_RULE].filter((r) => broken.has(r.name)).map((r) => `  ${r.name}: ${r.comment}`);
  return `\n${lines.join("\n")}\n\n${why.join("\n")}${why.length ? "\n\n" : ""}✘ ${violations.length} layer violations (${counted})\n`;
}

// Run as a script (not imported by the layer test).
if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const report = checkLayers(process.argv[2] ?? process.cwd());
  process.stdout.write(formatReport(report));
  process.exitCode = report.violations.length === 0 ? 0 : 1;
}
