// Renaming changes what Biome wants: `import … from "./gen/zeta/v1/zeta_pb.js"` sorts after `./gen/grpc/…`
// where `./gen/example/…` sorted before it, and a longer name can push a line past the width. So the new
// repository is formatted with its own biome.json by the Biome version the template pins (the scaffolder
// depends on the same version; a test checks they agree): `make lint` then passes whatever the name.
import { execFileSync } from "node:child_process";
import fs from "node:fs";
import { createRequire } from "node:module";
import path from "node:path";

/**
 * `biome check --write --linter-enabled=false` in dir: formatting and import order only, no lint fixes (the
 * template passes lint as it is). Done while rendering, so a repo made with --no-install is formatted too.
 * A template without biome.json is left alone.
 */
export function formatRepo(dir: string): string {
  if (!fs.existsSync(path.join(dir, "biome.json"))) return "no biome.json: not formatted";
  const biome = createRequire(import.meta.url).resolve("@biomejs/biome/bin/biome");
  try {
    execFileSync(process.execPath, [biome, "check", "--write", "--linter-enabled=false", "--no-errors-on-unmatched", "--colors=off", "."], {
      cwd: dir,
      stdio: ["ignore", "pipe", "pipe"],
      encoding: "utf8",
    });
  } catch (e) {
    const { stdout = "", stderr = "" } = e as { stdout?: string; stderr?: string };
    throw new Error(`biome check --write failed:\n${`${stdout}${stderr}`.trim().split("\n").slice(-20).join("\n")}`);
  }
  return "formatted with Biome";
}
