// Which of the template's files `update` may change in a generated repo ("framework") and which are the
// user's from the day they were generated ("yours"). Decided on the template's own paths (before renaming),
// by rules rather than a list, so files the template gains later are classified without touching this code.
//
// Files the template does not ship (your own protos, services, tests, anything you add) are never even
// looked at: update only visits paths that exist in the old or the new template.
import { deriveNames } from "./names.js";
import { isVerbatim, renamePath } from "./rename.js";

// Renaming with a name no template path contains reveals the paths that carry the service's name,
// whatever the repo's own name is (even a service named `example`).
const PROBE = deriveNames("zz-probe-svc");

/** Starting points the template hands over: the example service, its API and its wiring. */
const YOURS_PREFIXES = ["src/service/"];
const YOURS_FILES = new Set(["src/main.ts", ".env"]);

/** Why a template file belongs to the user, or undefined when it is framework (merged by update). */
export function yoursReason(templateRel: string): string | undefined {
  if (YOURS_FILES.has(templateRel)) return "yours";
  if (YOURS_PREFIXES.some((p) => templateRel.startsWith(p))) return "your service code";
  // proto/ holds your APIs; only the vendored protos (google, grpc, buf, and the framework's grpcsvc) are framework.
  if (templateRel.startsWith("proto/") && !isVerbatim(templateRel)) return "your proto";
  // Anything named after the service (renamed from `example`): its proto, handlers and tests,
  // e.g. test/example-service.test.ts → test/<stem>-service.test.ts. Framework tests are not named after it.
  if (!isVerbatim(templateRel) && renamePath(templateRel, PROBE) !== templateRel) return "named after your service";
  return undefined;
}

export const isYours = (templateRel: string): boolean => yoursReason(templateRel) !== undefined;
