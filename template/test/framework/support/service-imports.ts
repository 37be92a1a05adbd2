// What a framework file uses of the service a repo is made for (its handlers, generated code, src/main.ts):
// the self-contained tests check that the framework's tests and tooling use none of it.
import { readdirSync } from "node:fs";
import { join, relative, resolve } from "node:path";

export const ROOT = resolve(import.meta.dirname, "../../..");
/** Generated code the framework may import: the vendored protos' (google/, grpc/, the framework's grpcsvc/), not your packages'. */
const VENDORED_GEN = /^src\/gen\/(google|grpc|grpcsvc)\//;
/** Module specifiers in import/export statements and dynamic imports. */
const SPECIFIER = /(?:\bfrom\s*|\bimport\s*\(\s*|^\s*import\s+)["']([^"']+)["']/gm;

export function tsFiles(dir: string): string[] {
  return readdirSync(join(ROOT, dir), { recursive: true, encoding: "utf8" })
    .filter((f) => f.endsWith(".ts"))
    .map((f) => join(dir, f));
}

/** What a framework file uses of your service: imports of src/service/, src/main.ts or your generated code, src/main.ts as a process. */
export function usesOfYourService(file: string, source: string): string[] {
  const found: string[] = [];
  for (const [, spec] of source.matchAll(SPECIFIER)) {
    if (!spec?.startsWith(".")) continue;
    const target = relative(ROOT, resolve(ROOT, file, "..", spec)).replaceAll("\\", "/");
    if (target.startsWith("src/service/") || target === "src/main.js" || (target.startsWith("src/gen/") && !VENDORED_GEN.test(target))) {
      found.push(`${file} imports ${spec}`);
    }
  }
  // A process started from src/main.ts (startServiceProcess("src/main.ts"), or a constant holding it): the
  // tests start test/framework/fixtures/fixture-main.ts instead. (deploy-image builds src/main.ts on purpose,
  // through the Dockerfile, and names it only in lists of paths.)
  // The same quote on both sides: a test named "src/main.ts's defaults …" starts nothing.
  for (const [use] of source.matchAll(/(?:\(|=)\s*(["'`])src\/main\.ts\1/g)) found.push(`${file} starts src/main.ts: ${use}`);
  return found;
}
