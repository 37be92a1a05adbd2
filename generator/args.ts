// Command-line parsing and validation; everything wrong here is a UsageError (exit 2) before any prompt or write.
import { parseArgs } from "node:util";
import { UsageError } from "./errors.js";

export const AUTH_MODES = ["none", "jwt", "api-key", "both"] as const;
export type AuthMode = (typeof AUTH_MODES)[number];

/** Ports the generated service itself listens on (gRPC, HTTP). */
export const SERVICE_PORTS = [9090, 9091] as const;

/** What the command line said. `undefined` means "not given": prompt for it or use the default. */
export interface CliArgs {
  dir?: string;
  name?: string;
  yes: boolean;
  auth?: AuthMode;
  adminPort?: number;
  unixSocket?: true;
  sse?: false;
  install?: false;
  git?: false;
  force: boolean;
  help: boolean;
  version: boolean;
}

export const USAGE = `Usage: create-grpc-svc [dir] [options]

Writes a TypeScript gRPC service (gRPC on 9090, the same API as REST/JSON on 9091)
into <dir>, named after the directory unless --name is given.

Options:
  --name <kebab-name>   package name, e.g. demo-svc (default: the directory's name);
                        the proto package and service derive from it: demo.v1, DemoService
  -y, --yes             never prompt; use the defaults for everything not given
  --auth <mode>         none | jwt | api-key | both (default: none); generated secrets
                        are written to .env only, never to .env.example
  --admin-port <port>   serve /metrics, /swagger/ and /debug/pprof/ on this port
                        (default: none, they stay on the HTTP port)
  --unix-socket         the gateway reaches the gRPC server over a Unix socket
                        (default: TCP loopback)
  --no-sse              turn off server-sent events for streaming RPCs (default: on)
  --no-install          skip npm install
  --no-git              skip git init and the initial commit
  --force               write into a non-empty directory, overwriting files
  -h, --help            show this help
  -v, --version         print the version

Questions are asked only when stdin is a terminal and --yes is absent.

Inside a generated repository, \`create-grpc-svc update\` brings its framework files up to this
version (see \`create-grpc-svc update --help\`).

Examples:
  npm create grpc-svc@latest my-svc
  npm create grpc-svc@latest orders -- --name orders-svc --auth jwt --yes
`;

/** Port for --admin-port: a plain integer 1-65535 that is not one of the service's own ports. */
export function parsePort(raw: string): number {
  if (!/^[0-9]+$/.test(raw)) throw new UsageError(`invalid --admin-port "${raw}": expected an integer 1-65535`);
  const port = Number(raw);
  if (port < 1 || port > 65535) throw new UsageError(`invalid --admin-port ${raw}: expected an integer 1-65535`);
  if ((SERVICE_PORTS as readonly number[]).includes(port)) {
    throw new UsageError(`invalid --admin-port ${port}: ${SERVICE_PORTS.join(" and ")} are the service's gRPC and HTTP ports`);
  }
  return port;
}

export function parseAuth(raw: string): AuthMode {
  if ((AUTH_MODES as readonly string[]).includes(raw)) return raw as AuthMode;
  throw new UsageError(`invalid --auth "${raw}": expected one of ${AUTH_MODES.join(", ")}`);
}

export function parseCliArgs(argv: readonly string[]): CliArgs {
  let parsed;
  try {
    // Node 20's parseArgs has no allowNegative, so the --no-* flags are options of their own.
    parsed = parseArgs({
      args: [...argv],
      strict: true,
      allowPositionals: true,
      options: {
        name: { type: "string" },
        yes: { type: "boolean", short: "y" },
        auth: { type: "string" },
        "admin-port": { type: "string" },
        "unix-socket": { type: "boolean" },
        "no-sse": { type: "boolean" },
        "no-install": { type: "boolean" },
        "no-git": { type: "boolean" },
        force: { type: "boolean" },
        help: { type: "boolean", short: "h" },
        version: { type: "boolean", short: "v" },
      },
    });
  } catch (err) {
    throw new UsageError(parseErrorMessage(err));
  }
  const { values: v, positionals } = parsed;
  if (positionals.length > 1) {
    throw new UsageError(`expected one target directory, got ${positionals.length}: ${positionals.join(" ")} (see --help)`);
  }
  const args: CliArgs = {
    yes: v.yes === true,
    force: v.force === true,
    help: v.help === true,
    version: v.version === true,
  };
  const dir = positionals[0];
  if (dir !== undefined) {
    if (dir.trim() === "") throw new UsageError("the target directory is empty");
    args.dir = dir;
  }
  if (v.name !== undefined) args.name = v.name;
  if (v.auth !== undefined) args.auth = parseAuth(v.auth);
  if (v["admin-port"] !== undefined) args.adminPort = parsePort(v["admin-port"]);
  if (v["unix-socket"]) args.unixSocket = true;
  if (v["no-sse"]) args.sse = false;
  if (v["no-install"]) args.install = false;
  if (v["no-git"]) args.git = false;
  return args;
}

/** parseArgs' messages are long and multi-line; say the same in one short line. */
function parseErrorMessage(err: unknown): string {
  const e = err as { code?: string; message?: string };
  const msg = e.message ?? String(err);
  // Quoted flag as parseArgs prints it: '--foo', '-y, --yes' or '--name <value>'.
  const flag = /'([^']+)'/.exec(msg)?.[1]?.split(", ").pop()?.replace(/ <value>$/, "") ?? "";
  if (e.code === "ERR_PARSE_ARGS_UNKNOWN_OPTION") return `unknown option ${flag} (see --help)`;
  if (/does not take an argument/.test(msg)) return `option ${flag} takes no value (see --help)`;
  if (/argument missing|ambiguous/.test(msg)) return `option ${flag} needs a value (see --help)`;
  return `${msg.split("\n")[0]} (see --help)`;
}

/** `create-grpc-svc update [--dry-run] [--force] [--base <tarball>]` */
export interface UpdateArgs {
  dryRun: boolean;
  force: boolean;
  base?: string;
  help: boolean;
}

export const UPDATE_USAGE = `Usage: create-grpc-svc update [--dry-run] [--force] [--base <tarball>]

Run inside a repository generated by create-grpc-svc (as \`npm create grpc-svc@latest -- update\`).
Renders the template of the version recorded in .create-grpc-svc.json and of this version with the
recorded options, and merges the difference into the repository's framework files (three-way, per file).
Your own files (src/main.ts, src/service/, your protos, files named after your service, .env and
everything the template does not ship) are never written. Overlapping edits get conflict markers and
exit code 1.

Options:
  --dry-run          print what would change; write nothing
  --force            run even when the git working tree has uncommitted changes
  --base <tarball>   the recorded version's create-grpc-svc tarball (default: npm pack
                     create-grpc-svc@<recorded version> from the registry)
  -h, --help         show this help
`;

export function parseUpdateArgs(argv: readonly string[]): UpdateArgs {
  let parsed;
  try {
    parsed = parseArgs({
      args: [...argv],
      strict: true,
      allowPositionals: false,
      options: {
        "dry-run": { type: "boolean" },
        force: { type: "boolean" },
        base: { type: "string" },
        help: { type: "boolean", short: "h" },
      },
    });
  } catch (err) {
    const msg = parseErrorMessage(err);
    throw new UsageError(msg.replace("(see --help)", "(see update --help)"));
  }
  const v = parsed.values;
  const args: UpdateArgs = { dryRun: v["dry-run"] === true, force: v.force === true, help: v.help === true };
  if (v.base !== undefined) {
    if (v.base.trim() === "") throw new UsageError("--base needs a tarball path (see update --help)");
    args.base = v.base;
  }
  return args;
}
