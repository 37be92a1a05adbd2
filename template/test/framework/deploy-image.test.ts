// The Dockerfile, without a Docker engine: its instructions are replayed here, stage by stage, each stage in a
// directory of its own standing for the image's filesystem, the build context filtered by .dockerignore as
// the builder does. The last stage is then checked (no dev dependency, no source) and started as the image's
// CMD with the image's environment only, and must serve /healthcheck with the build arguments.
// Unlike the rest of the framework suite, this test builds and starts your service (src/main.ts, through the
// Dockerfile): the image is what ships. It calls only what every service has (health, metrics), never your API.
import assert from "node:assert/strict";
import { type ChildProcess, execFileSync, spawn } from "node:child_process";
import { once } from "node:events";
import { cpSync, existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync } from "node:fs";
import { type AddressInfo, createServer } from "node:net";
import { tmpdir } from "node:os";
import { dirname, join, posix } from "node:path";
import { after, before, describe, test } from "node:test";
import { fileURLToPath } from "node:url";
import { createClient } from "../../src/framework/index.js";
import { Health, HealthCheckResponse_ServingStatus as ServingStatus } from "../../src/gen/grpc/health/v1/health_pb.js";

const ROOT = fileURLToPath(new URL("../..", import.meta.url));
const read = (rel: string) => readFileSync(join(ROOT, rel), "utf8");
const PKG = JSON.parse(read("package.json")) as { name: string; engines?: { node?: string } };
const BUILD_ARGS = { VERSION: "9.8.7-replay.1", GIT_COMMIT: "0123abc", GIT_BRANCH: "release/replay", BUILD_DATE: "2026-01-02T03:04:05Z" };
const MINUTE = 60_000;

// --- Dockerfile ---

interface Instruction {
  op: string;
  args: string;
  line: number;
}

/** Instructions with comments dropped and `\` continuations joined. */
function parseDockerfile(text: string): Instruction[] {
  const out: Instruction[] = [];
  let pending = "";
  let start = 0;
  text.split("\n").forEach((raw, i) => {
    const line = raw.trim();
    if (pending === "" && (line === "" || line.startsWith("#"))) return;
    if (pending === "") start = i + 1;
    if (line.endsWith("\\")) {
      pending += `${line.slice(0, -1)} `;
      return;
    }
    const full = pending + line;
    pending = "";
    const m = /^(\w+)\s+([\s\S]*)$/.exec(full);
    assert.ok(m, `line ${start}: ${full}`);
    out.push({ op: (m[1] as string).toUpperCase(), args: m[2] as string, line: start });
  });
  return out;
}

/** `KEY=value KEY2="v 2"` (ENV and ARG); an ARG may have no value. */
function keyValues(args: string, vars: Record<string, string>): [string, string | undefined][] {
  return [...args.matchAll(/([A-Za-z_]\w*)(?:=("(?:[^"\\]|\\.)*"|\S*))?/g)].map((m) => {
    const raw = m[2];
    if (raw === undefined) return [m[1] as string, undefined];
    const unquoted = raw.startsWith('"') ? (JSON.parse(raw) as string) : raw;
    return [m[1] as string, substitute(unquoted, vars)];
  });
}

/** Docker's `$VAR` and `${VAR}` in FROM, WORKDIR, COPY, ENV and ARG (RUN leaves them to the shell). */
function substitute(text: string, vars: Record<string, string>): string {
  return text.replace(/\$(?:\{(\w+)\}|(\w+))/g, (_, a: string | undefined, b: string | undefined) => vars[(a ?? b) as string] ?? "");
}

/** Splits leading `--flag=value` options from an instruction's arguments. */
function flags(args: string): { flags: Record<string, string>; rest: string } {
  const found: Record<string, string> = {};
  let rest = args;
  for (let m = /^--([\w-]+)=(\S+)\s+/.exec(rest); m; m = /^--([\w-]+)=(\S+)\s+/.exec(rest)) {
    found[m[1] as string] = m[2] as string;
    rest = rest.slice(m[0].length);
  }
  return { flags: found, rest };
}

// --- .dockerignore, as Docker's pattern matcher reads it ---

interface Pattern {
  re: RegExp;
  negate: boolean;
  source: string;
}

function dockerignore(text: string): Pattern[] {
  return text
    .split("\n")
    .map((l) => l.trim())
    .filter((l) => l !== "" && !l.startsWith("#"))
    .map((l) => {
      const negate = l.startsWith("!");
      const source = posix.normalize((negate ? l.slice(1) : l).trim()).replace(/^\/+|\/+$/g, "");
      let re = "";
      for (let i = 0; i < source.length; i++) {
        const c = source[i] as string;
        if (c === "*" && source[i + 1] === "*") {
          re += source[i + 2] === "/" ? "(?:.*/)?" : ".*";
          i += source[i + 2] === "/" ? 2 : 1;
        } else if (c === "*") re += "[^/]*";
        else if (c === "?") re += "[^/]";
        else re += c.replace(/[.+^${}()|[\]\\]/g, "\\$&");
      }
      return { re: new RegExp(`^${re}$`), negate, source };
    });
}

/** A path is excluded when the last pattern matching it or one of its parent directories is not negated. */
function excluded(rel: string, patterns: Pattern[]): boolean {
  const parts = rel.split("/");
  const prefixes = parts.map((_, i) => parts.slice(0, i + 1).join("/"));
  let out = false;
  for (const p of patterns) if (prefixes.some((x) => p.re.test(x))) out = !p.negate;
  return out;
}

/** The files the builder receives: the context directory less what .dockerignore excludes. */
function contextFiles(dir: string, patterns: Pattern[]): Set<string> {
  const files = new Set<string>();
  const walk = (rel: string) => {
    for (const e of readdirSync(join(dir, rel), { withFileTypes: true })) {
      const child = rel ? `${rel}/${e.name}` : e.name;
      if (e.isDirectory()) {
        // An excluded directory is skipped whole unless a `!` pattern reaches inside it.
        const reopened = patterns.some((p) => p.negate && (p.source === child || p.source.startsWith(`${child}/`)));
        if (excluded(child, patterns) && !reopened) continue;
        walk(child);
      } else if (!excluded(child, patterns)) files.add(child);
    }
  };
  walk("");
  return files;
}

// --- the replay ---

interface Stage {
  name: string;
  base: string;
  root: string;
  workdir: string;
  env: Record<string, string>;
  args: Record<string, string>;
  user?: string;
  expose: number[];
  cmd?: string[];
  runs: string[];
}

/** The tools' environment: this machine's, less what an outer npm, make or node --test would leak into npm. */
function hostEnv(): Record<string, string> {
  const env: Record<string, string> = {};
  for (const [k, v] of Object.entries(process.env)) {
    if (v === undefined) continue;
    if (
      /^(npm_package_|npm_lifecycle_|npm_config_local_prefix$|npm_command$|INIT_CWD$|MAKEFLAGS$|MFLAGS$|MAKELEVEL$|NODE_TEST_CONTEXT$|NODE_OPTIONS$|NODE_ENV$)/.test(
        k,
      )
    )
      continue;
    env[k] = v;
  }
  return env;
}

function replay(dockerfile: string, context: string, work: string, buildArgs: Record<string, string>): Stage[] {
  const patterns = dockerignore(existsSync(join(context, ".dockerignore")) ? readFileSync(join(context, ".dockerignore"), "utf8") : "");
  const files = contextFiles(context, patterns);
  const stages: Stage[] = [];
  const globalArgs: Record<string, string> = {};
  let stage: Stage | undefined;
  const inImage = (s: Stage, p: string) => join(s.root, posix.resolve(s.workdir, p));

  for (const { op, args, line } of parseDockerfile(dockerfile)) {
    const where = `Dockerfile:${line} ${op}`;
    if (op === "ARG") {
      const target = stage ? stage.args : globalArgs;
      for (const [k, v] of keyValues(args, { ...globalArgs, ...stage?.args, ...stage?.env })) {
        target[k] = buildArgs[k] ?? v ?? globalArgs[k] ?? "";
      }
      continue;
    }
    if (op === "FROM") {
      const m = /^(\S+)(?:\s+AS\s+(\S+))?$/i.exec(substitute(args, globalArgs));
      assert.ok(m, where);
      const name = m[2] ?? String(stages.length);
      const root = join(work, `stage-${stages.length}-${name}`);
      mkdirSync(root, { recursive: true });
      stage = { name, base: m[1] as string, root, workdir: "/", env: {}, args: {}, expose: [], runs: [] };
      stages.push(stage);
      continue;
    }
    assert.ok(stage, `${where} before FROM`);
    const vars = { ...stage.args, ...stage.env };
    switch (op) {
      case "WORKDIR":
        stage.workdir = posix.resolve(stage.workdir, substitute(args, vars));
        mkdirSync(join(stage.root, stage.workdir), { recursive: true });
        break;
      case "ENV":
        for (const [k, v] of keyValues(args, vars)) stage.env[k] = v ?? "";
        break;
      case "USER":
        stage.user = substitute(args, vars);
        break;
      case "EXPOSE":
        stage.expose.push(...args.split(/\s+/).map((p) => Number(p.replace(/\/tcp$/, ""))));
        break;
      case "CMD":
        stage.cmd = JSON.parse(args) as string[];
        break;
      case "COPY": {
        const { flags: f, rest } = flags(args);
        const parts = substitute(rest, vars).split(/\s+/);
        const dest = parts.pop() as string;
        const from = f.from === undefined ? undefined : stages.find((s) => s.name === f.from);
        assert.ok(f.from === undefined || from, `${where}: no stage ${f.from}`);
        const target = inImage(stage, dest);
        const intoDir = dest.endsWith("/") || parts.length > 1;
        for (const src of parts) {
          if (from) {
            const source = join(from.root, posix.resolve(from.workdir, src));
            assert.ok(existsSync(source), `${where}: ${src} not found in stage ${from.name}`);
            const to = statSync(source).isDirectory() || !intoDir ? target : join(target, posix.basename(src));
            cpSync(source, to, { recursive: true });
            continue;
          }
          const rel = posix
            .normalize(src)
            .replace(/^\.?\/+/, "")
            .replace(/\/+$/, "");
          const inside = [...files].filter((file) => file.startsWith(`${rel}/`));
          if (files.has(rel)) {
            const to = intoDir ? join(target, posix.basename(rel)) : target;
            mkdirSync(dirname(to), { recursive: true });
            cpSync(join(context, rel), to);
          } else {
            assert.ok(inside.length > 0, `${where}: ${src} is not in the build context (see .dockerignore)`);
            for (const file of inside) {
              const to = join(target, file.slice(rel.length + 1));
              mkdirSync(dirname(to), { recursive: true });
              cpSync(join(context, file), to);
            }
          }
        }
        break;
      }
      case "RUN": {
        // A cache mount keeps npm's cache out of the image; here npm simply uses this machine's cache.
        const { rest } = flags(args);
        stage.runs.push(rest);
        execFileSync("sh", ["-c", rest], {
          cwd: join(stage.root, stage.workdir),
          env: { ...hostEnv(), npm_config_prefer_offline: "true", ...stage.args, ...stage.env },
          stdio: ["ignore", "pipe", "pipe"],
          timeout: 5 * MINUTE,
        });
        break;
      }
      default:
        assert.fail(`${where}: the replay does not know ${op}`);
    }
  }
  return stages;
}

// --- the tests ---

const dockerfile = read("Dockerfile");
const instructions = parseDockerfile(dockerfile);

describe("the Dockerfile", () => {
  test("builds on one slim image of the Node LTS that .nvmrc names, at least the major version package.json requires", () => {
    const globalArgs = Object.fromEntries(
      instructions
        .slice(
          0,
          instructions.findIndex((i) => i.op === "FROM"),
        )
        .flatMap((i) => keyValues(i.args, {}))
        .map(([k, v]) => [k, v ?? ""]),
    );
    const bases = instructions.filter((i) => i.op === "FROM").map((i) => substitute(i.args, globalArgs).split(/\s+/)[0]);
    assert.ok(bases.length >= 2, "multi-stage");
    assert.equal(new Set(bases).size, 1, `every stage on the same base: ${bases.join(", ")}`);
    const m = /^node:(\d+)-[a-z]+-slim$/.exec(bases[0] as string);
    assert.ok(m, `a slim Debian Node image: ${bases[0]}`);
    const major = Number(m[1]);
    assert.equal(major % 2, 0, "an LTS (even) major");
    assert.ok(major >= Number(/\d+/.exec(PKG.engines?.node ?? "0")?.[0]), "satisfies engines.node");
    assert.equal(major, Number(read(".nvmrc").trim()), "the version developers and CI run (.nvmrc)");
  });

  test("runs node itself as a non-root user, in production mode", () => {
    const last = instructions.slice(instructions.findLastIndex((i) => i.op === "FROM"));
    const cmd = last.find((i) => i.op === "CMD");
    assert.ok(cmd);
    const argv = JSON.parse(cmd.args) as string[];
    assert.deepEqual(argv.slice(0, 1), ["node"], "exec form, node as PID 1: SIGTERM reaches the service");
    assert.ok(!last.some((i) => i.op === "ENTRYPOINT"), "no wrapper in front of node");
    const user = last.find((i) => i.op === "USER")?.args ?? "";
    assert.match(user, /^[1-9]\d*(:\d+)?$/, "a numeric non-root user (runAsNonRoot can verify it)");
    assert.ok(last.some((i) => i.op === "ENV" && /\bNODE_ENV=production\b/.test(i.args)));
  });

  test(".dockerignore keeps local state and secrets out of the build context", () => {
    const files = contextFiles(ROOT, dockerignore(read(".dockerignore")));
    for (const f of files) {
      assert.doesNotMatch(f, /(^|\/)(\.env|node_modules|dist|\.git|coverage|\.tmp)(\/|$)|^src\/gen\/|^test\/|\.test\.ts$/, f);
    }
    for (const needed of ["package.json", "package-lock.json", "buf.yaml", "buf.gen.yaml", "tsconfig.json", "src/main.ts"]) {
      assert.ok(files.has(needed), needed);
    }
    // The matcher behaves as Docker's: last match wins, a directory pattern covers what is inside it.
    const p = dockerignore("*\n!src\nsrc/gen\n**/*.test.ts\n!keep/**/*.md\n");
    assert.deepEqual(
      ["src/a.ts", "src/gen/x.ts", "src/a/b.test.ts", ".env", "node_modules/x/y.js", "keep/a/b.md", "keep/x.txt"].map((f) =>
        excluded(f, p),
      ),
      [false, true, true, true, true, false, true],
    );
  });
});

describe("the image, replayed without Docker", { timeout: 10 * MINUTE }, () => {
  let work = "";
  let final: Stage;
  let app = "";
  let server: ChildProcess | undefined;
  let output = "";
  let httpUrl = "";

  before(
    async () => {
      work = mkdtempSync(join(tmpdir(), "image-replay-"));
      const stages = replay(dockerfile, ROOT, work, BUILD_ARGS);
      final = stages.at(-1) as Stage;
      app = join(final.root, final.workdir);
    },
    { timeout: 8 * MINUTE },
  );

  after(async () => {
    if (server && server.exitCode === null) server.kill("SIGKILL");
    if (work) rmSync(work, { recursive: true, force: true });
  });

  test("the last stage holds dist/, package.json and production dependencies, and nothing else", () => {
    assert.deepEqual(readdirSync(app).sort(), ["dist", "node_modules", "package.json"]);
    assert.ok(existsSync(join(app, "dist/main.js")));
    const lock = JSON.parse(read("package-lock.json")) as { packages: Record<string, { dev?: boolean }> };
    const devOnly = Object.entries(lock.packages)
      .filter(([path, p]) => p.dev && path.startsWith("node_modules/"))
      .map(([path]) => path);
    assert.ok(devOnly.length > 0, "the lockfile marks dev-only packages");
    const present = devOnly.filter((path) => existsSync(join(app, path)));
    assert.deepEqual(present, [], "no dev-only package in the image");
    for (const tool of ["typescript", "tsx", "@bufbuild/buf", "oxlint", "oxfmt"])
      assert.ok(!existsSync(join(app, "node_modules", tool)), tool);
    assert.ok(existsSync(join(app, "node_modules/@grpc/grpc-js")), "production dependencies are installed");
  });

  test("the compile cache the build fills is there for the user the image runs as, readable by it", () => {
    // Node keeps one cache directory per user id; the build runs as root, the image as USER. Without a
    // directory of its own every container start compiled the bundle from source.
    const uid = (final.user ?? "").split(":")[0] ?? "";
    assert.match(uid, /^[1-9]\d*$/);
    const cache = join(app, "dist/.compile-cache");
    const dirs = readdirSync(cache);
    const own = dirs.find((d) => d.endsWith(`-${uid}`));
    assert.ok(own, `a directory for user ${uid} in ${dirs.join(", ")}`);
    // The build's own directory, named by the user id of the build (this test's process).
    const built = dirs.find((d) => d.endsWith(`-${process.getuid?.() ?? 0}`));
    assert.ok(built, `the build's own directory in ${dirs.join(", ")}`);
    assert.deepEqual(readdirSync(join(cache, own)).sort(), readdirSync(join(cache, built)).sort());
    for (const file of readdirSync(join(cache, own))) {
      assert.equal(statSync(join(cache, own, file)).mode & 0o444, 0o444, file);
      assert.deepEqual(readFileSync(join(cache, own, file)), readFileSync(join(cache, built, file)), file);
    }
  });

  test("the build arguments become the health body's metadata", () => {
    assert.equal(JSON.parse(readFileSync(join(app, "package.json"), "utf8")).version, BUILD_ARGS.VERSION);
    for (const k of ["GIT_COMMIT", "GIT_BRANCH", "BUILD_DATE"] as const) assert.equal(final.env[k], BUILD_ARGS[k], k);
    assert.equal(final.env.NODE_ENV, "production");
  });

  test("starts as the image's CMD with production dependencies only and serves /healthcheck", { timeout: MINUTE }, async () => {
    const [cmd, ...args] = final.cmd as [string, ...string[]];
    // Only the image's environment (plus ports of this test): nothing from .env or this shell reaches it.
    const env = {
      PATH: process.env.PATH ?? "/usr/bin:/bin",
      ...final.env,
      LISTEN_HOST: "127.0.0.1",
      GRPC_PORT: "0",
      HTTP_PORT: "0",
      GRPC_GRACEFUL_DURATION_IN_SECONDS: "0",
    };
    server = spawn(cmd, args, { cwd: app, env, stdio: ["ignore", "pipe", "pipe"] });
    const ready = await new Promise<Record<string, unknown>>((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`not ready in 30 s:\n${output}`)), 30_000);
      server?.stderr?.on("data", (d) => (output += d));
      server?.stdout?.on("data", (d) => {
        output += d;
        for (const line of output.split("\n")) {
          if (!line.startsWith("{")) continue;
          const entry = JSON.parse(line) as Record<string, unknown>;
          if (entry.msg === "ready") {
            clearTimeout(timer);
            resolve(entry);
          }
        }
      });
      server?.on("exit", (code) => reject(new Error(`exited ${code}:\n${output}`)));
    });
    httpUrl = `http://127.0.0.1:${ready.httpPort}`;

    const health = await fetch(`${httpUrl}/healthcheck`);
    assert.equal(health.status, 200);
    const body = (await health.json()) as Record<string, string>;
    assert.equal(body.app, PKG.name);
    assert.equal(body.version, BUILD_ARGS.VERSION);
    assert.equal(body.git_commit, BUILD_ARGS.GIT_COMMIT);
    assert.equal(body.branch, BUILD_ARGS.GIT_BRANCH);
    assert.equal(body.build_date, BUILD_ARGS.BUILD_DATE);
    assert.equal((await fetch(`${httpUrl}/readycheck`)).status, 200);
    // A call to the gRPC server (the standard health service, which every service has, whatever its API):
    // the compiled code and its gRPC dependencies all work.
    const grpcHealth = createClient(Health, `127.0.0.1:${ready.grpcPort}`, { maxAttempts: 1 });
    try {
      assert.equal((await grpcHealth.check({ service: "" })).status, ServingStatus.SERVING);
    } finally {
      grpcHealth.close();
    }
    assert.equal((await fetch(`${httpUrl}/metrics`)).status, 200);
  });

  test("SIGTERM stops it cleanly with exit code 0", { timeout: MINUTE }, async () => {
    assert.ok(server && server.exitCode === null, "running");
    const exited = new Promise<number | null>((resolve) => server?.on("exit", (code) => resolve(code)));
    server.kill("SIGTERM");
    assert.equal(await exited, 0, output);
    assert.match(output, /"msg":"shutting down"/);
  });

  test("stack traces in its logs point into src/, not into the bundle (source maps)", { timeout: MINUTE }, async () => {
    // A start-up failure that logs its stack: the gRPC port is taken.
    const busy = createServer();
    await new Promise<void>((resolve) => busy.listen(0, "127.0.0.1", resolve));
    try {
      const [cmd, ...args] = final.cmd as [string, ...string[]];
      const port = String((busy.address() as AddressInfo).port);
      const env = { PATH: process.env.PATH ?? "/usr/bin:/bin", ...final.env, LISTEN_HOST: "127.0.0.1", GRPC_PORT: port, HTTP_PORT: "0" };
      const child = spawn(cmd, args, { cwd: app, env, stdio: ["ignore", "pipe", "pipe"] });
      let out = "";
      child.stdout.on("data", (d) => (out += d));
      child.stderr.on("data", (d) => (out += d));
      const [code] = (await once(child, "close")) as [number | null];
      assert.equal(code, 1, out);
      const fatal = out
        .split("\n")
        .filter((l) => l.startsWith("{"))
        .map((l) => JSON.parse(l) as { level?: string; err?: { stack?: string } })
        .find((l) => l.level === "fatal");
      const stack = fatal?.err?.stack ?? "";
      assert.match(stack, /\/src\/framework\/[\w/-]+\.ts:\d+:\d+/, stack);
      assert.doesNotMatch(stack, /dist\/service\.js/, stack);
    } finally {
      busy.close();
    }
  });
});
