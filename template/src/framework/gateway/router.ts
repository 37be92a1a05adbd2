import type { PathTemplate } from "./path-template.js";

/**
 * Matches request paths against the compiled templates with a segment trie, so a
 * lookup costs the path's length, not the number of routes.
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

export class Router<R> {
  readonly #root = new Node();

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
  }

  /** `path` is the raw (still percent-encoded) path without the query string. */
  match(method: string, path: string): MatchResult<R> {
    if (!path.startsWith("/")) return { kind: "bad-path", reason: "path must start with /" };
    const raw = path.slice(1).split("/");
    let decoded: string[];
    try {
      decoded = raw.map(decodeURIComponent);
    } catch {
      return { kind: "bad-path", reason: `malformed percent-encoding in path "${path}"` };
    }
    let allow: Set<string> | undefined;
    const attempt = (literals: string[], verb: string): R | undefined => {
      for (const byMethod of this.#endpoints(this.#root, literals, 0, verb)) {
        const route = byMethod.get(method) as R | undefined;
        if (route !== undefined) return route;
        allow ??= new Set();
        for (const m of byMethod.keys()) allow.add(m);
      }
      return undefined;
    };
    // A trailing ":verb" may be a custom verb or part of a literal; try the verb first.
    // Only a literal colon counts: an escaped one (%3A) is data.
    const last = raw.length - 1;
    const colon = raw[last]!.lastIndexOf(":");
    if (colon > 0) {
      const head = raw[last]!.slice(0, colon);
      const rawSegments = [...raw.slice(0, last), head];
      const route = attempt([...decoded.slice(0, last), decodeURIComponent(head)], raw[last]!.slice(colon + 1));
      if (route !== undefined) return { kind: "found", route, segments: rawSegments };
    }
    const route = attempt(decoded, "");
    if (route !== undefined) return { kind: "found", route, segments: raw };
    if (allow) return { kind: "method-not-allowed", allow: [...allow].sort() };
    return { kind: "not-found" };
  }

  /** Every endpoint map reachable for these segments: literals first, then `*`, then `**`. */
  *#endpoints(node: Node, segments: string[], i: number, verb: string): Generator<Map<string, unknown>> {
    if (i === segments.length) {
      const here = node.endpoints.get(verb);
      if (here) yield here;
    } else {
      const literal = node.literals.get(segments[i]!);
      if (literal) yield* this.#endpoints(literal, segments, i + 1, verb);
      if (node.single) yield* this.#endpoints(node.single, segments, i + 1, verb);
    }
    // `**` takes the rest of the path, possibly nothing.
    const rest = node.multi?.endpoints.get(verb);
    if (rest) yield rest;
  }
}
