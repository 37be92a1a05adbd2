// Renaming changes what the formatter wants: `import … from "./gen/zeta/v1/zeta_pb.js"` sorts after `./gen/grpc/…`
// where `./gen/example/…` sorted before it, and a longer name can push a line past the width. So the new
// repository is formatted with its own .oxfmtrc.json by the oxfmt version the template pins (the scaffolder
// depends on the same version; a test checks they agree): `make lint` then passes whatever the name.
import { execFileSync } from "node:child_process";
import fs from "node:fs";
import { createRequire } from "node:module";
import path from "node:path";

/** The code oxfmt formats: what biome.json's `files.includes` named before (src/gen and test/gen are in its ignorePatterns). */
// plop/ and plopfile.js: the generators of templates before generators/, formatted as those versions did when
// `update` renders one as its base (else the unchanged plop files of a repo would look edited, and stay).
const CODE = ["src", "test", "scripts", "bench", "generators", "plop", "plopfile.js"];

/**
 * `oxfmt` in dir: formatting and import order only, no lint fixes (the template passes lint as it is). Done while
 * rendering, so a repo made with --no-install is formatted too. A template without .oxfmtrc.json is left alone.
 */
export function formatRepo(dir: string): string {
  if (!fs.existsSync(path.join(dir, ".oxfmtrc.json"))) return "no .oxfmtrc.json: not formatted";
  // oxfmt's exports leave out its bin: found beside its package.json.
  const pkg = createRequire(import.meta.url).resolve("oxfmt/package.json");
  const oxfmt = path.join(path.dirname(pkg), "bin/oxfmt");
  const paths = CODE.filter((p) => fs.existsSync(path.join(dir, p)));
  try {
    execFileSync(process.execPath, [oxfmt, "--no-error-on-unmatched-pattern", ...paths], {
      cwd: dir,
      stdio: ["ignore", "pipe", "pipe"],
      encoding: "utf8",
    });
  } catch (e) {
    const { stdout = "", stderr = "" } = e as { stdout?: string; stderr?: string };
    throw new Error(`oxfmt failed:\n${`${stdout}${stderr}`.trim().split("\n").slice(-20).join("\n")}`);
  }
  return "formatted with oxfmt";
}
