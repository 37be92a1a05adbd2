// TypeScript types of an OpenAPI 3.1 document, written by openapi-typescript (`make sdk` and the tests use this).
//
// openapi-typescript needs TypeScript 5's compiler API (a peer dependency), which the project's TypeScript 7 does not
// have; npm cannot install both side by side in one tree. So it is not a devDependency: it runs through `npm exec`
// with both versions pinned here, fetched once into npm's cache (~/.npm/_npx) and taken from there afterwards.
import { execFile } from "node:child_process";
import { promisify } from "node:util";

export const OPENAPI_TYPESCRIPT = "openapi-typescript@7.13.0";
export const TYPESCRIPT_5 = "typescript@5.9.3";

/** Writes the types of `input` (a file or an http(s) URL of an OpenAPI document) to `output` (a .ts file). */
/** Asynchronous: the document may come from a server in this very process. */
export async function writeOpenApiTypes(input: string, output: string, cwd = process.cwd()): Promise<void> {
  await promisify(execFile)(
    "npm",
    [
      "exec",
      "--yes",
      "--prefer-offline",
      `--package=${OPENAPI_TYPESCRIPT}`,
      `--package=${TYPESCRIPT_5}`,
      "--",
      "openapi-typescript",
      input,
      "--output",
      output,
    ],
    { cwd },
  );
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const [input, output] = process.argv.slice(2);
  if (!input || !output) {
    console.error("usage: node --import tsx scripts/sdk/openapi-types.ts <openapi.json|url> <out.ts>");
    process.exit(2);
  }
  await writeOpenApiTypes(input, output);
}
