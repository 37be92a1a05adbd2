import type { PathTemplate } from "./path-template.js";

/**
 * Matches request paths against the compiled templates with a segment trie, so a
 * lookup costs the path's length (plus backtracking between literal, `*` and `**`
 * branches), never the number of routes.
 */
class Node {
  readonly literals = new Map<string, Node>();
  single: Node | undefined;
  multi: Node | undefined;
  /** verb → HTTP method → route, for templates that end at this node. */
  readonly endpoints = new Map<string, Map<string, unknown>>();
}

export type MatchResult<R> =
  | { kind: "found"; route: R; segments: string[] }
  | { kind: "method-not-allowed"; allow: string[] }
  | { kind: "not-found" }
  | { kind: "bad-path"; reason: string };

type Found<R> = Extract<MatchResult<R>, { kind: "found" }>;

export class Router<R> {
  readonly #root = new Node();
  /**
   * Templates made only of literals (most REST paths: `/v1/echo`), by exact path then method: their
   * match is one lookup of the raw path. Anything else (parameters, escapes, a verb) takes the trie.
   */
  readonly #exact = new Map<string, Map<string, Found<R>>>();

  add(method: string, template: PathTemplate, route: R): void {
    let node = this.#root;
    for (const s of template.segments) {
      if (s.kind === "literal") {
        let child = node.literals.get(s.value);
        if (!child) node.literals.set(s.value, (child = new Node()));
        node = child;
      } else if (s.kind === "single") node = node.single ??= new Node();
      else node = node.multi ??= new Node();
    }
    let byMethod = node.endpoints.get(template.verb);
    if (!byMethod) node.endpoints.set(template.verb, (byMethod = new Map()));
    if (byMethod.has(method)) throw new Error(`two routes for ${method} ${template.source}`);
    byMethod.set(method, route);
    const literals = template.segments.map((s) => (s.kind === "literal" ? s.value : undefined));
    // A literal with "%" would compare decoded in the trie but raw here: those stay with the trie.
    if (template.verb === "" && literals.every((l) => l !== undefined && !l.includes("%"))) {
      const path = `/${literals.join("/")}`;
      let exact = this.#exact.get(path);
      if (!exact) this.#exact.set(path, (exact = new Map()));
      exact.set(method, Object.freeze({ kind: "found", route, segments: Object.freeze(literals as string[]) as string[] }));
    }
  }

  /**
   * `path` is the raw (still percent-encoded) path without the query string. Literals match
   * after percent-decoding; the segments returned are still encoded, for the decoder. HEAD is
   * served by a GET route when there is no HEAD route.
   */
  match(method: string, path: string): MatchResult<R> {
    const exact = this.#exact.get(path)?.get(method);
    if (exact) return exact;
    if (path.charCodeAt(0) !== 47 /* / */) return { kind: "bad-path", reason: "path must start with /" };
    const raw = path.slice(1).split("/");
    const decoded = path.includes("%") ? decodeAll(raw) : raw;
    if (decoded === undefined) return { kind: "bad-path", reason: `malformed percent-encoding in path "${path}"` };
    // A trailing ":verb" may be a custom verb or part of a literal; try the verb first.
    // Only a literal colon counts: an escaped one (%3A) is data.
    const last = raw.length - 1;
    const colon = raw[last]!.lastIndexOf(":");
    let verbSegments: string[] | undefined;
    let verbDecoded: string[] | undefined;
    let verb = "";
    if (colon > 0) {
      verb = raw[last]!.slice(colon + 1);
      verbSegments = raw.slice();
      verbSegments[last] = raw[last]!.slice(0, colon);
      verbDecoded = decoded === raw ? verbSegments : decoded.slice();
      if (decoded !== raw) verbDecoded[last] = decodeURIComponent(verbSegments[last]!);
      const route = this.#find(this.#root, verbDecoded, 0, verb, method);
      if (route !== undefined) return { kind: "found", route, segments: verbSegments };
    }
    const route = this.#find(this.#root, decoded, 0, "", method);
    if (route !== undefined) return { kind: "found", route, segments: raw };
    // Not found for this method: is the path served under another one?
    const allow = new Set<string>();
    if (verbDecoded) this.#allowed(this.#root, verbDecoded, 0, verb, allow);
    this.#allowed(this.#root, decoded, 0, "", allow);
    return allow.size > 0 ? { kind: "method-not-allowed", allow: [...allow].sort() } : { kind: "not-found" };
  }

  /** The methods served at `path` (raw, without the query string), sorted; empty when none is. */
  methodsAt(path: string): string[] {
    const match = this.match("", path);
    return match.kind === "method-not-allowed" ? match.allow : [];
  }

  /** Depth-first: literal, then `*`, then `**` (which takes the rest of the path, possibly nothing). */
  #find(node: Node, segments: string[], i: number, verb: string, method: string): R | undefined {
    if (i === segments.length) {
      const route = endpoint<R>(node.endpoints.get(verb), method);
      if (route !== undefined) return route;
    } else {
      const literal = node.literals.get(segments[i]!);
      if (literal) {
        const route = this.#find(literal, segments, i + 1, verb, method);
        if (route !== undefined) return route;
      }
      if (node.single) {
        const route = this.#find(node.single, segments, i + 1, verb, method);
        if (route !== undefined) return route;
      }
    }
    return node.multi ? endpoint<R>(node.multi.endpoints.get(verb), method) : undefined;
  }

  #allowed(node: Node, segments: string[], i: number, verb: string, allow: Set<string>): void {
    if (i === segments.length) addMethods(node.endpoints.get(verb), allow);
    else {
      const literal = node.literals.get(segments[i]!);
      if (literal) this.#allowed(literal, segments, i + 1, verb, allow);
      if (node.single) this.#allowed(node.single, segments, i + 1, verb, allow);
    }
    if (node.multi) addMethods(node.multi.endpoints.get(verb), allow);
  }
}

function endpoint<R>(byMethod: Map<string, unknown> | undefined, method: string): R | undefined {
  if (!byMethod) return undefined;
  const route = byMethod.get(method) as R | undefined;
  return route !== undefined || method !== "HEAD" ? route : (byMethod.get("GET") as R | undefined);
}

function addMethods(byMethod: Map<string, unknown> | undefined, allow: Set<string>): void {
  if (byMethod) for (const m of byMethod.keys()) allow.add(m);
}

function decodeAll(segments: string[]): string[] | undefined {
  try {
    return segments.map(decodeURIComponent);
  } catch {
    return undefined;
  }
}
