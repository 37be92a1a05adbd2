// The template of the version a repo was generated with: the published tarball of that version, fetched by
// npm itself (`npm pack`, so the user's registry, proxy, auth and cache settings apply), or a tarball given
// with --base. Extracted with the system's tar (present wherever git is; Windows 10+ ships bsdtar).
import { spawnSync } from "node:child_process";
import fs from "node:fs";
import path from "node:path";
import { UsageError } from "./errors.js";

const PACKAGE = "create-grpc-svc";
const isWindows = process.platform === "win32";

export interface BaseTemplate {
  templateDir: string;
  version: string;
  /** Where it came from, for the report: `the npm registry` or the tarball path. */
  source: string;
}

/** A failure to obtain the base: nothing has been written (exit 1). */
export class BaseUnavailableError extends Error {
  override name = "BaseUnavailableError";
}

function lastLine(text: string | null | undefined): string {
  const lines = (text ?? "")
    .split("\n")
    .map((l) => l.replace(/^npm (error|ERR!) ?/, "").trim())
    .filter((l) => l !== "" && !/^(A complete log|Log files were written)/.test(l));
  return lines.find((l) => /^(code )?E[A-Z0-9]+\b|404|ENOTFOUND|ECONNREFUSED|ENOTCACHED/.test(l)) ?? lines.at(-1) ?? "";
}

/** `npm pack create-grpc-svc@<version>` into `workDir`; returns the tarball path. */
export function packFromRegistry(version: string, workDir: string): string {
  const spec = `${PACKAGE}@${version}`;
  const r = spawnSync("npm", ["pack", spec, "--ignore-scripts", "--pack-destination", workDir], {
    cwd: workDir,
    encoding: "utf8",
    shell: isWindows, // npm.cmd
    stdio: ["ignore", "pipe", "pipe"],
  });
  if (r.error || r.status !== 0) {
    const why = r.error ? r.error.message : lastLine(r.stderr) || lastLine(r.stdout) || `exit ${r.status}`;
    throw new BaseUnavailableError(
      `cannot fetch ${spec} from the npm registry (${why}); nothing was written. Pass --base <tarball> to give that version's tarball`,
    );
  }
  const tgz = fs.readdirSync(workDir).find((f) => f.endsWith(".tgz"));
  if (!tgz) throw new BaseUnavailableError(`npm pack ${spec} wrote no tarball; nothing was written`);
  return path.join(workDir, tgz);
}

/**
 * npm tarballs hold only files and directories. A link member could point outside the extraction directory
 * and a later member be written through it, so a tarball with any other kind of member is refused.
 */
function assertPlainMembers(tarball: string, source: string): void {
  const r = spawnSync("tar", ["-tvzf", path.resolve(tarball)], { encoding: "utf8", stdio: ["ignore", "pipe", "pipe"], maxBuffer: 64 * 1024 * 1024 });
  if (r.error || r.status !== 0) {
    throw new BaseUnavailableError(`cannot read ${source}: ${r.error?.message || lastLine(r.stderr) || `exit ${r.status}`}; nothing was written`);
  }
  // `tar -tv` prints ls-style lines: the first character is the member's type.
  const odd = r.stdout.split("\n").find((line) => line !== "" && !/^[-d]/.test(line));
  if (odd) throw new UsageError(`${source} holds a link or special file, which no npm tarball has: ${odd.trim()}`);
}

/** Extracts a create-grpc-svc tarball and checks it carries a template. */
export function extractTemplate(tarball: string, workDir: string, source: string): BaseTemplate {
  if (!fs.existsSync(tarball) || !fs.statSync(tarball).isFile()) throw new UsageError(`--base ${tarball}: no such file`);
  assertPlainMembers(tarball, source);
  const dest = path.join(workDir, "extracted");
  fs.mkdirSync(dest, { recursive: true });
  // GNU and bsd tar both refuse members that would land outside dest (absolute or `..` paths).
  const r = spawnSync("tar", ["-xzf", path.resolve(tarball), "-C", dest], { encoding: "utf8", stdio: ["ignore", "pipe", "pipe"] });
  if (r.error || r.status !== 0) {
    throw new BaseUnavailableError(`cannot extract ${source}: ${r.error?.message || lastLine(r.stderr) || `exit ${r.status}`}; nothing was written`);
  }
  const pkgFile = path.join(dest, "package", "package.json");
  let pkg: { name?: unknown; version?: unknown };
  try {
    pkg = JSON.parse(fs.readFileSync(pkgFile, "utf8"));
  } catch {
    throw new UsageError(`${source} is not an npm package tarball (no package/package.json)`);
  }
  if (pkg.name !== PACKAGE || typeof pkg.version !== "string") throw new UsageError(`${source} is not a ${PACKAGE} tarball (it is ${String(pkg.name)})`);
  const templateDir = path.join(dest, "package", "template");
  if (!fs.existsSync(path.join(templateDir, "package.json"))) throw new UsageError(`${source} has no template/ to update from`);
  return { templateDir, version: pkg.version, source };
}
