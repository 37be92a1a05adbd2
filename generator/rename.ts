// Pure rename rules: template (a runnable service named `example`) → the new service's names.
import type { Names } from "./names.js";

// Token boundaries are "not a letter or digit" (so `_`, `.`, `/` and `-` separate tokens; `\b` would not split on `_`).
// `example` right after `env` + `.`/`-`/`_` means the env template (`.env.example`, scripts/env-example.ts,
// ENV_EXAMPLE), never the service, so it is never renamed; `envExample` already fails the left boundary.
// Nor a reserved example domain (RFC 2606, 6761): `example.com|net|org` and the `.example` top-level domain
// (`idp.example.com`, `api.example`) stay as they are, whatever the new name: `app.example.com` must never
// become a real third-party host such as `app.stripe.com`. Also `exampleClient` (camelCase).
const LOWER = /(?<![A-Za-z0-9])(?<![Ee]nv[._-])(?<![A-Za-z0-9-]\.)example(?![a-z0-9])(?!\.(?:com|net|org)(?![A-Za-z0-9-]))/g;
const PASCAL = /(?<![A-Za-z0-9])(?<![Ee]nv[._-])Example(?![a-z0-9])/g; // `ExampleService`, `ExampleServiceHandlers`
const UPPER = /(?<![A-Za-z0-9])(?<!ENV_)EXAMPLE(?![A-Za-z0-9])/g; // `EXAMPLE_FOO`
// APP_NAME defaults to the package name, so a template value of `example` means the full name, not the stem.
const APP_NAME = /(APP_NAME\s*[=:]\s*["']?)example(?![A-Za-z0-9])/g;
// make sdk's package is `<package name>-client`: its docs and tests name `example-client`, the full name too.
const SDK_NAME = /(?<![A-Za-z0-9-])example(?=-client(?![A-Za-z0-9]))/g;
// In deploy/, `example.v1` is the proto package inside metric labels (grpc_service="example.v1.ExampleService").
const PROTO_PACKAGE = /(?<![A-Za-z0-9])example(?=\.v[0-9])/g;

/** Template directories copied byte-for-byte: third-party protos whose comments say "for example", and the framework's options. */
export const VERBATIM_DIRS = ["proto/google/", "proto/grpc/", "proto/buf/", "proto/grpcsvc/"];

export function renameTokens(text: string, n: Names): string {
  return text
    .replace(APP_NAME, `$1${n.name}`)
    .replace(SDK_NAME, n.name)
    .replace(LOWER, n.stem)
    .replace(PASCAL, n.pascal)
    .replace(UPPER, n.upper);
}

/** Renames each segment of a `/`-separated relative path: proto/example/v1/example.proto → proto/demo/v1/demo.proto. */
export function renamePath(rel: string, n: Names): string {
  if (isVerbatim(rel)) return rel;
  return rel
    .split("/")
    .map((seg) => renameTokens(seg, n))
    .join("/");
}

export function isVerbatim(rel: string): boolean {
  return VERBATIM_DIRS.some((d) => rel.startsWith(d));
}

/** Renames a UTF-8 file's content; `rel` is its template-relative path (forward slashes). */
export function renameContent(rel: string, text: string, n: Names): string {
  if (isVerbatim(rel)) return text;
  if (rel === "package.json") return renamePackageJson(text, n);
  if (rel === "package-lock.json") return renameLockfile(text, n);
  if (rel.startsWith("deploy/")) {
    // Kubernetes and Grafana names carry the full package name; remaining case variants follow the general rule.
    return renameTokens(text.replace(PROTO_PACKAGE, n.stem).replace(LOWER, n.name), n);
  }
  if (rel === "README.md") return renameTokens(text.replace(/^# example[ \t]*$/m, `# ${n.name}`), n);
  return renameTokens(text, n);
}

const stringify = (v: unknown) => `${JSON.stringify(v, null, 2)}\n`;

function renamePackageJson(text: string, n: Names): string {
  const pkg = JSON.parse(text) as Record<string, unknown>;
  pkg.name = n.name;
  if (typeof pkg.description === "string") pkg.description = pkg.description.replace(LOWER, n.name);
  // Scripts may point at proto/example/... paths; dependency names are left alone.
  if (pkg.scripts && typeof pkg.scripts === "object") {
    const scripts = pkg.scripts as Record<string, unknown>;
    for (const [k, v] of Object.entries(scripts)) if (typeof v === "string") scripts[k] = renameTokens(v, n);
  }
  return stringify(pkg);
}

function renameLockfile(text: string, n: Names): string {
  // Only the root package's name: every other entry describes a real npm package.
  const lock = JSON.parse(text) as { name?: string; packages?: Record<string, { name?: string }> };
  lock.name = n.name;
  const root = lock.packages?.[""];
  if (root) root.name = n.name;
  return stringify(lock);
}
