// The table of contents of template/README.md (its `##` and `###` headings, linked with GitHub's anchors),
// kept between the `<!-- toc -->` markers. `node --import tsx scripts/readme-toc.ts --write` rewrites it after
// a section is added or renamed; test/template-docs.test.ts fails while it is stale.
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

/** The TOC lines for a markdown text (headings inside fenced code blocks are not headings). */
export function readmeToc(markdown: string): string {
  const slug = slugger();
  const lines: string[] = [];
  let fenced = false;
  for (const line of markdown.split("\n")) {
    if (/^(```|~~~)/.test(line)) fenced = !fenced;
    const m = !fenced && /^(#{1,3}) (.+?)\s*$/.exec(line);
    if (!m) continue;
    const title = m[2] as string;
    const anchor = slug(title);
    if (m[1] === "#") continue; // the title
    lines.push(`${m[1] === "###" ? "  " : ""}- [${title}](#${anchor})`);
  }
  return lines.join("\n");
}

/** The markdown with its TOC block replaced by a fresh one. */
export function withToc(markdown: string): string {
  const start = markdown.indexOf(TOC_START);
  const end = markdown.indexOf(TOC_END);
  if (start < 0 || end < start) throw new Error(`no ${TOC_START} … ${TOC_END} block`);
  return `${markdown.slice(0, start + TOC_START.length)}\n${readmeToc(markdown)}\n${markdown.slice(end)}`;
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const file = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../template/README.md");
  const text = fs.readFileSync(file, "utf8");
  if (process.argv.includes("--write")) fs.writeFileSync(file, withToc(text));
  else process.stdout.write(`${readmeToc(text)}\n`);
}
