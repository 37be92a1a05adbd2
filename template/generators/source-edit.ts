// Edits of the user's TypeScript (src/main.ts, the service files) through a real parser: each edit finds its
// syntax node (the `run([...])` list, the `defineService(...)` options, an import) and inserts next to it. The
// result is then formatted (oxfmt), so an insertion only has to be valid code.
import { parse } from "@babel/parser";
import type * as t from "@babel/types";
import { GeneratorError } from "./repo.js";

export class Source {
  readonly #ast: t.File;
  readonly #edits: { at: number; text: string }[] = [];

  constructor(
    readonly file: string,
    readonly text: string,
  ) {
    try {
      this.#ast = parse(text, { sourceType: "module", plugins: ["typescript"] });
    } catch (err) {
      throw new GeneratorError(`cannot parse ${file}: ${(err as Error).message}`);
    }
  }

  get body(): t.Statement[] {
    return this.#ast.program.body;
  }

  insert(at: number, text: string): void {
    this.#edits.push({ at, text });
  }

  /** The text with every insertion applied (insertions at one position keep their order). */
  result(): string {
    let out = this.text;
    const edits = this.#edits.map((e, i) => ({ ...e, i })).sort((a, b) => b.at - a.at || b.i - a.i);
    for (const e of edits) out = out.slice(0, e.at) + e.text + out.slice(e.at);
    return out;
  }

  /** Local names bound by the file's import declarations. */
  importedNames(): Set<string> {
    const names = new Set<string>();
    for (const s of this.body) if (s.type === "ImportDeclaration") for (const spec of s.specifiers) names.add(spec.local.name);
    return names;
  }

  /** Where a local import binding comes from: `exampleService` → `./service/example-service.js`. */
  importSource(local: string): string | undefined {
    for (const s of this.body) {
      if (s.type === "ImportDeclaration" && s.specifiers.some((spec) => spec.local.name === local)) return s.source.value;
    }
    return undefined;
  }

  /**
   * Adds `names` to the file's `import { … } from "from"` of the same kind (value or type) when it has one, else
   * adds that import below the last one (the formatter does not merge or sort imports).
   */
  addImport(names: string[], from: string, typeOnly = false): void {
    const imports = this.body.filter((s) => s.type === "ImportDeclaration");
    const kind = typeOnly ? "type" : "value";
    const same = imports.find(
      (s) =>
        s.source.value === from &&
        (s.importKind ?? "value") === kind &&
        s.specifiers.length > 0 &&
        s.specifiers.every((x) => x.type === "ImportSpecifier"),
    );
    if (same) {
      this.insert(same.specifiers[same.specifiers.length - 1]!.end!, `, ${names.join(", ")}`);
      return;
    }
    const at = imports.length > 0 ? imports[imports.length - 1]!.end! : 0;
    const line = `import ${typeOnly ? "type " : ""}{ ${names.join(", ")} } from "${from}";`;
    this.insert(at, at === 0 ? `${line}\n` : `\n${line}`);
  }

  /** Adds the names of `names` that no import binds yet. */
  ensureImported(names: string[], from: string): void {
    const have = this.importedNames();
    const missing = names.filter((n) => !have.has(n));
    if (missing.length > 0) this.addImport(missing, from);
  }

  /** The array literal passed as the first argument of the top-level `await run([...])` (src/main.ts). */
  runList(): t.ArrayExpression {
    for (const node of walk(this.body)) {
      if (node.type === "CallExpression" && node.callee.type === "Identifier" && node.callee.name === "run") {
        const list = node.arguments[0];
        if (list?.type === "ArrayExpression") return list;
      }
    }
    throw new GeneratorError(`${this.file}: no run([...]) call with a list of services`);
  }

  /** The options object of the file's `defineService(Desc, { ... })` call. */
  serviceOptions(): t.ObjectExpression {
    const calls: t.ObjectExpression[] = [];
    for (const node of walk(this.body)) {
      if (node.type === "CallExpression" && node.callee.type === "Identifier" && node.callee.name === "defineService") {
        const options = node.arguments[1];
        if (options?.type === "ObjectExpression") calls.push(options);
      }
    }
    if (calls.length !== 1) {
      throw new GeneratorError(
        `${this.file}: expected one defineService(Service, { ... }) call with an object literal, found ${calls.length}`,
      );
    }
    return calls[0]!;
  }

  /** Appends `element` to an array literal. */
  appendElement(list: t.ArrayExpression, element: string): void {
    const last = list.elements[list.elements.length - 1];
    if (last) this.insert(last.end!, `,\n${element}`);
    else this.insert(list.start! + 1, `\n${element}\n`);
  }

  /** Appends a property (or method) `text` to an object literal. */
  appendProperty(object: t.ObjectExpression, text: string): void {
    const last = object.properties[object.properties.length - 1];
    if (last) this.insert(last.end!, `,\n${text}`);
    else this.insert(object.start! + 1, `\n${text}\n`);
  }
}

/** A property of an object literal by name: `handlers: {...}`, `workers: [...]`, `preStart(app) {...}`. */
export function property(object: t.ObjectExpression, name: string): t.ObjectProperty | t.ObjectMethod | undefined {
  for (const p of object.properties) {
    if (p.type === "SpreadElement" || p.computed) continue;
    const key = p.key.type === "Identifier" ? p.key.name : p.key.type === "StringLiteral" ? p.key.value : undefined;
    if (key === name) return p;
  }
  return undefined;
}

/** The body and first parameter of a method property (`preStart(app) {}` or `preStart: async (app) => {}`). */
export function functionOf(p: t.ObjectProperty | t.ObjectMethod): { body: t.BlockStatement; param: string | undefined } | undefined {
  const fn = p.type === "ObjectMethod" ? p : p.value;
  if (fn.type !== "ObjectMethod" && fn.type !== "FunctionExpression" && fn.type !== "ArrowFunctionExpression") return undefined;
  if (fn.body.type !== "BlockStatement") return undefined;
  const first = fn.params[0];
  return { body: fn.body, param: first?.type === "Identifier" ? first.name : undefined };
}

/** `x.prepend(...)` statements directly in a block. */
export function prependCall(block: t.BlockStatement): t.CallExpression | undefined {
  for (const s of block.body) {
    const e = s.type === "ExpressionStatement" ? s.expression : undefined;
    if (
      e?.type === "CallExpression" &&
      e.callee.type === "MemberExpression" &&
      e.callee.property.type === "Identifier" &&
      e.callee.property.name === "prepend"
    ) {
      return e;
    }
  }
  return undefined;
}

/** Every node below `roots`, depth first (statements, expressions, properties). */
function* walk(roots: t.Node[]): Generator<t.Node> {
  const stack: t.Node[] = [...roots].reverse();
  while (stack.length > 0) {
    const node = stack.pop()!;
    yield node;
    const children: t.Node[] = [];
    for (const [key, value] of Object.entries(node)) {
      if (key === "loc" || key.endsWith("Comments")) continue;
      if (Array.isArray(value)) {
        for (const v of value) if (isNode(v)) children.push(v);
      } else if (isNode(value)) children.push(value);
    }
    stack.push(...children.reverse());
  }
}

function isNode(v: unknown): v is t.Node {
  return typeof v === "object" && v !== null && typeof (v as { type?: unknown }).type === "string";
}
