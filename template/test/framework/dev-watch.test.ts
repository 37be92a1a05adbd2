/**
 * `make dev` for real: a copy of this repository whose service answers from src/service/books.ts (over the
 * test-only library proto), started with `make dev`, then edited the ways editors save — a new file renamed
 * over the old one (vim, `sed -i`), JetBrains' safe write (old renamed away, new renamed in, old deleted) and a
 * plain write after both. After each edit the test awaits the new answer. The old process must stop on its
 * own (no drain wait in dev) rather than be killed.
 */
import assert from "node:assert/strict";
import { type ChildProcess, spawn } from "node:child_process";
import { once } from "node:events";
import { cpSync, mkdirSync, mkdtempSync, renameSync, rmSync, symlinkSync, unlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createInterface } from "node:readline";
import { after, before, test } from "node:test";
import { fileURLToPath } from "node:url";

const TEMPLATE = fileURLToPath(new URL("../..", import.meta.url));
type LogLine = Record<string, unknown>;

const MAIN = `import { run } from "./framework/index.js";
import { books } from "./service/books.js";

await run([books]);
`;
// Every method needs a handler; only GetBook is called.
const books = (title: string) => `import { Code, defineService, GrpcError } from "../framework/index.js";
import { LibraryService } from "../../test/gen/gatewaytest/v1/library_pb.js";

const unimplemented = () => {
  throw new GrpcError(Code.UNIMPLEMENTED, "not in this test");
};
const others = Object.fromEntries(Object.keys(LibraryService.method).map((name) => [name, unimplemented]));
export const books = defineService(LibraryService, {
  handlers: { ...others, getBook: (req: { name: string }) => ({ name: req.name, title: ${JSON.stringify(title)} }) } as never,
});
`;

let dir = "";
let child: ChildProcess;
const logs: LogLine[] = [];
const waiters: { from: number; match: (l: LogLine) => boolean; resolve: (l: LogLine) => void; reject: (e: Error) => void }[] = [];
let exited = false;

/** The first log line from index `from` on that matches, already seen or still to come. */
function nextLog(from: number, match: (l: LogLine) => boolean): Promise<LogLine> {
  const seen = logs.slice(from).find(match);
  if (seen) return Promise.resolve(seen);
  if (exited) return Promise.reject(new Error("make dev exited"));
  return new Promise((resolve, reject) => waiters.push({ from, match, resolve, reject }));
}

before(async () => {
  dir = mkdtempSync(join(tmpdir(), "dev-watch-"));
  // timestamps kept, so make sees the generated code as up to date
  for (const rel of ["Makefile", "package.json", "package-lock.json", "tsconfig.json", "src", "test/gen"]) {
    cpSync(join(TEMPLATE, rel), join(dir, rel), { recursive: true, preserveTimestamps: true });
  }
  symlinkSync(join(TEMPLATE, "node_modules"), join(dir, "node_modules"));
  rmSync(join(dir, "src/service"), { recursive: true }); // the service below replaces the user's
  mkdirSync(join(dir, "src/service"));
  writeFileSync(join(dir, "src/main.ts"), MAIN);
  writeFileSync(join(dir, "src/service/books.ts"), books("v1"));
  // .env asks for the production drain; the dev target must win over it.
  writeFileSync(join(dir, ".env"), "GRPC_GRACEFUL_DURATION_IN_SECONDS=7\n");

  const env: Record<string, string> = {};
  for (const name of ["PATH", "HOME", "TMPDIR", "LANG"]) if (process.env[name] !== undefined) env[name] = process.env[name] as string;
  // -o: the copied src/gen is current; never regenerate it here. detached: its own process group, as a terminal's job.
  child = spawn("make", ["dev", "-o", "src/gen/.stamp"], {
    cwd: dir,
    env: { ...env, LOG_FORMAT: "json", LISTEN_HOST: "127.0.0.1", GRPC_PORT: "0", HTTP_PORT: "0" },
    stdio: ["ignore", "pipe", "inherit"],
    detached: true,
  });
  createInterface({ input: child.stdout! }).on("line", (text) => {
    if (!text.startsWith("{")) return; // tsx's "change in ./src/… Restarting..." lines
    const line = JSON.parse(text) as LogLine;
    logs.push(line);
    if (line.level === "fatal") for (const w of waiters.splice(0)) w.reject(new Error(`the service failed: ${JSON.stringify(line)}`));
    for (const w of [...waiters]) {
      if (logs.indexOf(line) >= w.from && w.match(line)) {
        waiters.splice(waiters.indexOf(w), 1);
        w.resolve(line);
      }
    }
  });
  child.on("exit", (code, signal) => {
    exited = true;
    for (const w of waiters.splice(0)) w.reject(new Error(`make dev exited (${code ?? signal})`));
  });
});

after(async () => {
  if (child?.pid && !exited) {
    process.kill(-child.pid, "SIGINT"); // Ctrl-C in the terminal
    const killer = setTimeout(() => process.kill(-child.pid!, "SIGKILL"), 10_000);
    await once(child, "exit");
    clearTimeout(killer);
  }
  if (dir) rmSync(dir, { recursive: true, force: true });
});

async function titleAt(ready: LogLine): Promise<string> {
  const res = await fetch(`${ready.rest}/v1/shelves/s1/books/b1`);
  assert.equal(res.status, 200);
  return ((await res.json()) as { title: string }).title;
}

/** Applies `edit`, then awaits the next ready line and returns the title it answers with and how long it took. */
async function afterEdit(edit: () => void): Promise<{ title: string; ms: number; startupMs: unknown; previousStopped: boolean }> {
  const from = logs.length;
  const started = performance.now();
  edit();
  const ready = await nextLog(from, (l) => l.msg === "ready");
  const title = await titleAt(ready);
  const previousStopped = logs.slice(from, logs.indexOf(ready)).some((l) => l.msg === "stopped");
  return { title, ms: Math.round(performance.now() - started), startupMs: ready.startup_ms, previousStopped };
}

const file = () => join(dir, "src/service/books.ts");

test("make dev serves the service, with the dev settings over .env's", { timeout: 60_000 }, async () => {
  const ready = await nextLog(0, (l) => l.msg === "ready");
  assert.equal(await titleAt(ready), "v1");
  const starting = logs.find((l) => l.msg === "starting");
  assert.match(String(starting?.config), /(^| )GRPC_GRACEFUL_DURATION_IN_SECONDS=0( |$)/, "no drain wait on a restart");
  assert.match(String(starting?.config), /(^| )SHUTDOWN_DURATION_IN_SECONDS=1( |$)/, "calls still running get 1 s");
});

test("an edit saved by renaming a new file over the old one (vim, sed -i) restarts it", { timeout: 60_000 }, async (t) => {
  const r = await afterEdit(() => {
    writeFileSync(`${file()}.tmp`, books("v2"));
    renameSync(`${file()}.tmp`, file());
  });
  assert.equal(r.title, "v2");
  assert.ok(r.previousStopped, "the old process shut down on its own");
  t.diagnostic(`edit → new answer: ${r.ms} ms (of which the new process's start-up: ${r.startupMs} ms)`);
});

test("a JetBrains safe write (old renamed away, new renamed in, old deleted) restarts it again", { timeout: 60_000 }, async (t) => {
  const r = await afterEdit(() => {
    writeFileSync(`${file()}___jb_tmp___`, books("v3"));
    renameSync(file(), `${file()}___jb_old___`);
    renameSync(`${file()}___jb_tmp___`, file());
    unlinkSync(`${file()}___jb_old___`);
  });
  assert.equal(r.title, "v3");
  t.diagnostic(`edit → new answer: ${r.ms} ms (of which the new process's start-up: ${r.startupMs} ms)`);
});

test("after those renames, a plain in-place write is still picked up", { timeout: 60_000 }, async (t) => {
  const r = await afterEdit(() => writeFileSync(file(), books("v4")));
  assert.equal(r.title, "v4");
  assert.ok(r.previousStopped);
  t.diagnostic(`edit → new answer: ${r.ms} ms (of which the new process's start-up: ${r.startupMs} ms)`);
});
