// Locates this package's root, template/ and version without depending on the build layout, and checks the
// template before anything is written. Kept free of node-plop so the first prompt appears at once.
import fs from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";

const PACKAGE_NAME = "create-grpc-svc";

/** Walks up from `from` to the directory whose package.json is ours: works from generator/*.ts and dist/generator/*.js. */
export function findPackageRoot(from: string = fileURLToPath(import.meta.url)): string {
  let dir = path.dirname(from);
  for (;;) {
    try {
      const pkg = JSON.parse(fs.readFileSync(path.join(dir, "package.json"), "utf8")) as { name?: string };
      if (pkg.name === PACKAGE_NAME) return dir;
    } catch {
      // no or unreadable package.json here: keep walking
    }
    const parent = path.dirname(dir);
    if (parent === dir) throw new Error(`cannot find the ${PACKAGE_NAME} package root above ${from}`);
    dir = parent;
  }
}

export function packageVersion(root: string = findPackageRoot()): string {
  return (JSON.parse(fs.readFileSync(path.join(root, "package.json"), "utf8")) as { version: string }).version;
}

export const defaultTemplateDir = (): string => path.join(findPackageRoot(), "template");

/** Fails before anything is written when the template is incomplete (e.g. a checkout without `npm run protos`). */
export function assertTemplateReady(templateDir: string): void {
  if (!fs.existsSync(path.join(templateDir, "package.json"))) {
    throw new Error(`the template is missing: no package.json in ${templateDir}`);
  }
  if (!fs.existsSync(path.join(templateDir, "proto/google/api/http.proto"))) {
    throw new Error(
      `the third-party protos were not gathered (${path.join(templateDir, "proto/google/api/http.proto")} is missing); run \`npm run protos\` in the create-grpc-svc checkout`,
    );
  }
}
