import { readFileSync } from "node:fs";
import type { Config } from "../config/schema.js";

/** The body of /healthcheck and /readycheck. Unknown values are "", never missing. */
export interface BuildInfo {
  app: string;
  version: string;
  git_commit: string;
  build_date: string;
  branch: string;
  node_version: string;
  os_arch: string;
}

/** package.json of the service (found from the working directory, as `npm start` and the image run it). */
export function readPackageJson(): { name?: string; version?: string } {
  try {
    return JSON.parse(readFileSync("package.json", "utf8")) as { name?: string; version?: string };
  } catch {
    return {};
  }
}

export function buildInfo(config: Config, pkg = readPackageJson()): BuildInfo {
  return {
    app: config.APP_NAME || pkg.name || "",
    version: pkg.version ?? "",
    git_commit: config.GIT_COMMIT,
    build_date: config.BUILD_DATE,
    branch: config.GIT_BRANCH,
    node_version: process.version,
    os_arch: `${process.platform}/${process.arch}`,
  };
}
