// Shared test helpers: temp dirs, template fixtures and running the real CLI as a child process.
import { type SpawnSyncReturns, spawnSync } from "node:child_process";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";

export const REPO = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../..");
export const REAL_TEMPLATE = path.join(REPO, "template");
export const TSX_LOADER = import.meta.resolve("tsx");

const made: string[] = [];
// Removed when the test process exits; node:test's after() would fire early when called from a before() hook.
process.on("exit", () => {
  for (const dir of made) fs.rmSync(dir, { recursive: true, force: true });
});

/** A fresh directory under os.tmpdir(), removed when the test file's process exits. */
export function tmpDir(prefix = "cgs-test-"): string {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), prefix));
  made.push(dir);
  return dir;
}

export function write(root: string, rel: string, content: string | Buffer, mode?: number): void {
  const file = path.join(root, rel);
  fs.mkdirSync(path.dirname(file), { recursive: true });
  fs.writeFileSync(file, content);
  if (mode !== undefined) fs.chmodSync(file, mode);
}

/** Bytes that are not UTF-8 (0xff) and contain "example": must be copied unchanged. */
export const BINARY = Buffer.from([0x89, 0x50, 0x4e, 0x47, 0xff, 0x00, ...Buffer.from("example"), 0xfe]);

/** A small synthetic template that exercises every rule, independent of the real template's progress. */
export function makeSyntheticTemplate(root: string): string {
  const t = path.join(root, "template");
  const json = (v: unknown) => `${JSON.stringify(v, null, 2)}\n`;
  write(t, "package.json", json({
    name: "example",
    version: "0.1.0",
    description: "example: a gRPC service",
    scripts: { generate: "buf generate proto/example" },
    dependencies: { "@grpc/grpc-js": "1.14.7" },
  }));
  write(t, "package-lock.json", json({
    name: "example",
    version: "0.1.0",
    lockfileVersion: 3,
    requires: true,
    packages: { "": { name: "example", version: "0.1.0" }, "node_modules/example-lib": { version: "1.0.0" } },
  }));
  write(t, "README.md",
    "# example\n\nCopy `.env.example` to `.env`.\n\n## Choices\n\n<!-- create-grpc-svc:choices -->\n- placeholder\n<!-- /create-grpc-svc:choices -->\n\nThe end.\n");
  write(t, "_gitignore", "node_modules/\ndist/\n.env\n");
  write(t, ".env.example", "# GRPC_PORT=9090\n# ADMIN_PORT=\n# JWT_SECRET=\n# DISABLE_SSE_MARSHALER=false\nAPP_NAME=example\n");
  write(t, ".env", "LOCAL_ONLY=1\n");
  write(t, "proto/example/v1/example.proto", "syntax = \"proto3\";\npackage example.v1;\nservice ExampleService {}\n");
  write(t, "proto/google/api/http.proto", "// For example, Example: a third-party comment that stays as is.\n");
  write(t, "src/main.ts",
    'import { ExampleService, file_example_v1_example } from "./gen/example/v1/example_pb.js";\n' +
      "const EXAMPLE_LIMIT = 1; // documented in .env.example\n" +
      "export const handlers: ExampleServiceHandlers = {};\nconst exampleClient = null;\n");
  write(t, "src/gen/example/v1/example_pb.ts", "// generated\n");
  write(t, "scripts/run.sh", "#!/bin/sh\necho example\n", 0o755);
  write(t, "assets/logo.bin", BINARY);
  write(t, "deploy/k8s/deployment.yaml", "metadata:\n  name: example\nspec:\n  image: example:latest\n");
  write(t, "deploy/grafana/dashboard.json",
    '{"title":"example","expr":"rate(grpc_server_handled_total{grpc_service=\\"example.v1.ExampleService\\"}[5m])","legendFormat":"{{instance}}"}\n');
  for (const skip of ["node_modules/x/index.js", "dist/main.js", "dist-bench/main.js", "coverage/lcov.info", ".tmp/x", "app-0.1.0.tgz"]) {
    write(t, skip, "example\n");
  }
  return t;
}

const SKIP = /(^|\/)(node_modules|dist|coverage|\.tmp)(\/|$)|^dist-[^/]*(\/|$)|^src\/gen(\/|$)|(^|\/)\.env$|\.tgz$/;

/** Stand-ins for files the real template may not have yet (it is being written in parallel). */
const STAND_INS: Record<string, string> = {
  _gitignore: "node_modules/\ndist/\nsrc/gen/\n.env\n",
  ".env.example": "# Copy to .env\n# ADMIN_PORT=\n# JWT_SECRET=\n# API_KEYS=\n# HTTP_HEADER_PREFIXES=\n",
  "README.md": "# example\n\n<!-- create-grpc-svc:choices -->\n<!-- /create-grpc-svc:choices -->\n",
  "proto/google/api/http.proto": "// stand-in\n",
};

/** A copy of the real template (as the CLI would read it) plus stand-ins for anything still missing. */
export function makeCliTemplate(root: string): string {
  const t = path.join(root, "template");
  fs.cpSync(REAL_TEMPLATE, t, {
    recursive: true,
    filter: (src) => !SKIP.test(path.relative(REAL_TEMPLATE, src).split(path.sep).join("/")),
  });
  for (const [rel, content] of Object.entries(STAND_INS)) {
    if (!fs.existsSync(path.join(t, rel))) write(t, rel, content);
  }
  return t;
}

export const realTemplateReady = (): boolean =>
  fs.existsSync(path.join(REAL_TEMPLATE, "proto/google/api/http.proto")) &&
  fs.existsSync(path.join(REAL_TEMPLATE, "proto/example/v1/example.proto"));

export type Variant = "tsx" | "dist";

export interface RunOptions {
  cwd?: string;
  env?: NodeJS.ProcessEnv;
  /** Template directory override; omit for a fixture-free run against template/. */
  template?: string;
  variant?: Variant;
}

/** Runs the CLI with stdin not a TTY (a pipe), like CI. */
export function runCli(args: string[], o: RunOptions = {}): SpawnSyncReturns<string> {
  const entry =
    o.variant === "dist"
      ? [path.join(REPO, "dist/generator/cli.js")]
      : ["--import", TSX_LOADER, path.join(REPO, "generator/cli.ts")];
  const env: NodeJS.ProcessEnv = { ...process.env, ...o.env };
  delete env.CREATE_GRPC_SVC_TEMPLATE;
  if (o.template) env.CREATE_GRPC_SVC_TEMPLATE = o.template;
  return spawnSync(process.execPath, [...entry, ...args], {
    cwd: o.cwd ?? os.tmpdir(),
    env,
    input: "",
    encoding: "utf8",
    timeout: 60_000,
  });
}

/** All files below `dir`, as forward-slash relative paths. */
export function listFiles(dir: string): string[] {
  const out: string[] = [];
  const walk = (rel: string) => {
    for (const e of fs.readdirSync(path.join(dir, rel), { withFileTypes: true })) {
      const child = rel ? `${rel}/${e.name}` : e.name;
      if (e.isDirectory()) {
        if (child !== ".git") walk(child);
      } else out.push(child);
    }
  };
  walk("");
  return out.sort();
}

/**
 * Every `example` (any case) left in paths or UTF-8 contents, except references to the env template
 * (`.env.example`, `env-example`, `envExample`, `ENV_EXAMPLE`), reserved example domains and the vendored
 * third-party protos.
 */
export function leftoverExampleTokens(dir: string): string[] {
  const found: string[] = [];
  // Reserved example domains (RFC 2606, 6761) stay as they are on purpose: rename.ts never makes them real hosts.
  const strip = (s: string) =>
    s.replace(/env[._-]?example/gi, "").replace(/example\.(?:com|net|org)(?![A-Za-z0-9-])|(?<=[A-Za-z0-9-]\.)example(?![a-z0-9])/g, "");
  for (const rel of listFiles(dir)) {
    if (/^proto\/(google|grpc|buf)\//.test(rel)) continue;
    if (/example/i.test(strip(rel))) found.push(`path ${rel}`);
    const bytes = fs.readFileSync(path.join(dir, rel));
    const text = bytes.toString("utf8");
    if (Buffer.from(text, "utf8").equals(bytes) === false) continue; // binary
    strip(text)
      .split("\n")
      .forEach((line, i) => {
        if (/example/i.test(line)) found.push(`${rel}:${i + 1}: ${line.trim().slice(0, 120)}`);
      });
  }
  return found;
}

/** Parses a dotenv text into active KEY=value pairs. */
export function parseEnv(text: string): Map<string, string> {
  const m = new Map<string, string>();
  for (const line of text.split("\n")) {
    const hit = /^([A-Z0-9_]+)=(.*)$/.exec(line.trim());
    if (hit) m.set(hit[1] as string, hit[2] as string);
  }
  return m;
}

/** An environment isolated from the developer's git config, with a fixed identity for a test's own commits. */
export function gitEnv(home: string): NodeJS.ProcessEnv {
  return {
    HOME: home,
    XDG_CONFIG_HOME: home,
    GIT_CONFIG_NOSYSTEM: "1",
    GIT_CONFIG_GLOBAL: path.join(home, "none"),
    GIT_AUTHOR_NAME: "t",
    GIT_AUTHOR_EMAIL: "t@localhost",
    GIT_COMMITTER_NAME: "t",
    GIT_COMMITTER_EMAIL: "t@localhost",
  };
}

/** Runs git in `cwd` with gitEnv(home), failing the test when git fails; its trimmed output. */
export function git(cwd: string, home: string, ...args: string[]): string {
  const r = spawnSync("git", args, { cwd, encoding: "utf8", env: { ...process.env, ...gitEnv(home) } });
  if (r.status !== 0) throw new Error(`git ${args.join(" ")}: ${r.stderr}`);
  return r.stdout.trim();
}
