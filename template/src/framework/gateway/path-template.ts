/**
 * google.api.http path templates, parsed once at start-up:
 *
 *   Template = "/" Segments [ Verb ] ;   Segment = "*" | "**" | LITERAL | Variable ;
 *   Variable = "{" FieldPath [ "=" Segments ] "}" ;   Verb = ":" LITERAL ;
 */
export type Segment = { kind: "literal"; value: string } | { kind: "single" } | { kind: "multi" };

export interface Variable {
  /** Field path in the request message, e.g. `["book", "name"]` for `{book.name}`. */
  fieldPath: string[];
  /** Index of the first path segment it captures. */
  start: number;
  /** Index after its last segment; `undefined` when it ends in `**` and takes the rest of the path. */
  end: number | undefined;
}

export interface PathTemplate {
  source: string;
  segments: Segment[];
  variables: Variable[];
  verb: string;
}

export class TemplateError extends Error {}

const IDENT = /^[A-Za-z_][A-Za-z0-9_]*$/;
/**
 * A literal segment or verb (matched against the percent-decoded path): anything but the template's own `{`,
 * `}`, `=` and `*`, and what no path segment holds (`?`, `#`, control characters); a `:` only inside a segment
 * that is not the last (splitVerb takes the last one's as the verb).
 */
const LITERAL = /^[^{}=*?#]+$/;
/** A control character (U+0000 to U+001F, U+007F), which no path segment holds. */
const hasControl = (text: string): boolean => {
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (c < 0x20 || c === 0x7f) return true;
  }
  return false;
};

export function parsePathTemplate(source: string): PathTemplate {
  if (!source.startsWith("/")) throw new TemplateError(`path template "${source}" must start with "/"`);
  const { path, verb } = splitVerb(source.slice(1), source);
  const segments: Segment[] = [];
  const variables: Variable[] = [];
  for (const part of splitTopLevel(path, source)) {
    if (part.startsWith("{")) {
      if (!part.endsWith("}")) throw new TemplateError(`unclosed variable in "${source}"`);
      const inner = part.slice(1, -1);
      const eq = inner.indexOf("=");
      const fieldPath = eq === -1 ? inner : inner.slice(0, eq);
      const pattern = eq === -1 ? "*" : inner.slice(eq + 1);
      if (pattern.includes("=")) throw new TemplateError(`a second "=" in variable "${part}" in "${source}"`);
      const fields = fieldPath.split(".");
      if (!fields.every((f) => IDENT.test(f))) throw new TemplateError(`bad field path "${fieldPath}" in "${source}"`);
      if (variables.some((v) => v.fieldPath.join(".") === fieldPath)) {
        throw new TemplateError(`field "${fieldPath}" bound by two variables in "${source}"`);
      }
      const start = segments.length;
      for (const inner of pattern.split("/")) segments.push(segment(inner, source, false));
      const endsInMulti = segments[segments.length - 1]?.kind === "multi";
      variables.push({ fieldPath: fields, start, end: endsInMulti ? undefined : segments.length });
    } else {
      segments.push(segment(part, source, true));
    }
  }
  const multi = segments.findIndex((s) => s.kind === "multi");
  if (multi !== -1 && multi !== segments.length - 1) throw new TemplateError(`"**" must be the last segment in "${source}"`);
  return { source, segments, variables, verb };
}

function segment(text: string, source: string, allowVariable: boolean): Segment {
  if (text === "*") return { kind: "single" };
  if (text === "**") return { kind: "multi" };
  if (!LITERAL.test(text) || hasControl(text) || (!allowVariable && text.includes(":"))) {
    throw new TemplateError(`bad segment "${text}" in "${source}"`);
  }
  return { kind: "literal", value: text };
}

/** Splits on "/" outside braces, so `{name=shelves/*}` stays one part. */
function splitTopLevel(path: string, source: string): string[] {
  const parts: string[] = [];
  let depth = 0;
  let current = "";
  for (const ch of path) {
    if (ch === "{") depth++;
    if (ch === "}") depth--;
    if (depth < 0 || depth > 1) throw new TemplateError(`unbalanced braces in "${source}"`);
    if (ch === "/" && depth === 0) {
      parts.push(current);
      current = "";
    } else current += ch;
  }
  if (depth !== 0) throw new TemplateError(`unbalanced braces in "${source}"`);
  parts.push(current);
  return parts;
}

/** The verb is a ":" after the last "/" that is outside any variable. */
function splitVerb(path: string, source: string): { path: string; verb: string } {
  const lastSlash = path.lastIndexOf("/");
  const colon = path.lastIndexOf(":");
  const lastBrace = path.lastIndexOf("}");
  if (colon > lastSlash && colon > lastBrace) {
    const verb = path.slice(colon + 1);
    if (verb === "") throw new TemplateError(`empty verb in "${source}"`);
    if (!LITERAL.test(verb) || hasControl(verb) || verb.includes(":")) throw new TemplateError(`bad verb "${verb}" in "${source}"`);
    return { path: path.slice(0, colon), verb };
  }
  return { path, verb: "" };
}
