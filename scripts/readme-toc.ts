// The table of contents of template/README.md (its `##` and `###` headings, linked with GitHub's anchors),
// kept between the `<!-- toc -->` markers, and of every template/docs/*.md page that has the markers.
// `node --import tsx scripts/readme-toc.ts --write` rewrites them after a section is added or renamed;
// test/template-docs.test.ts fails while one is stale. headingAnchors() gives the link check its anchors.
import fs from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";

export const TOC_START = "<!-- toc -->";
export const TOC_END = "<!-- /toc -->";

/** GitHub's heading anchor: lower case, punctuation dropped, spaces to hyphens; repeats get -1, -2… */
function slugger(): (heading: string) => string {
  const seen = new Map<string, number>();
  return (heading) => {
    const base = heading
      .toLowerCase()
      .replace(/[^\p{L}\p{N}\s_-]/gu, "")
      .replace(/\s/g, "-");
    const n = seen.get(base) ?? 0;
    seen.set(base, n + 1);
    return n === 0 ? base : `${base}-${n}`;
  };
}

/** Every heading of a markdown text with its level and anchor (headings inside fenced code blocks are not headings). */
function headings(markdown: string): { level: number; title: string; anchor: string }[] {
  const slug = slugger();
  const out: { level: number; title: string; anchor: string }[] = [];
  let fenced = false;
  for (const line of markdown.split("\n")) {
    if (/^(```|~~~)/.test(line)) fenced = !fenced;
    const m = !fenced && /^(#{1,6}) (.+?)\s*$/.exec(line);
    if (m) out.push({ level: (m[1] as string).length, title: m[2] as string, anchor: slug(m[2] as string) });
  }
  return out;
}

/** The `#anchor`s a link into this markdown text may name. */
export function headingAnchors(markdown: string): Set<string> {
  return new Set(headings(markdown).map((h) => h.anchor));
}

/** The TOC lines for a markdown text: its `##` and `###` headings. */
export function readmeToc(markdown: string): string {
  return headings(markdown)
    .filter((h) => h.level === 2 || h.level === 3)
    .map((h) => `${h.level === 3 ? "  " : ""}- [${h.title}](#${h.anchor})`)
    .join("\n");
}

/** The markdown with its TOC block replaced by a fresh one. */
export function withToc(markdown: string): string {
  const start = markdown.indexOf(TOC_START);
  const end = markdown.indexOf(TOC_END);
  if (start < 0 || end < start) throw new Error(`no ${TOC_START} … ${TOC_END} block`);
  return `${markdown.slice(0, start + TOC_START.length)}\n${readmeToc(markdown)}\n${markdown.slice(end)}`;
}

/** template/README.md and the template/docs/ pages that carry the TOC markers. */
export function tocFiles(template: string): string[] {
  const docs = path.join(template, "docs");
  const pages = fs.existsSync(docs) ? fs.readdirSync(docs).filter((f) => f.endsWith(".md")).sort() : [];
  return ["README.md", ...pages.map((f) => `docs/${f}`)].filter((rel) =>
    fs.readFileSync(path.join(template, rel), "utf8").includes(TOC_START),
  );
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const template = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../template");
  for (const rel of tocFiles(template)) {
    const file = path.join(template, rel);
    const text = fs.readFileSync(file, "utf8");
    if (process.argv.includes("--write")) fs.writeFileSync(file, withToc(text));
    else process.stdout.write(`${rel}:\n${readmeToc(text)}\n`);
  }
}
