// Ctrl-C while the scaffolder runs `npm install`: a real CLI process (the compiled bin) in its own process group,
// a stand-in npm that announces itself and waits, then SIGINT to the whole group as a terminal sends it. The CLI
// must outlive npm and say what was written and the exact command that finishes the job.
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { once } from "node:events";
import fs from "node:fs";
import path from "node:path";
import { describe, it } from "node:test";
import { makeCliTemplate, REPO, tmpDir, write } from "./helpers.js";

const FINISH = `npm install --no-audit --no-fund && git init -b main && git add -A && git commit -m "Initial commit from create-grpc-svc"`;

async function interrupted(signal: NodeJS.Signals, target: "group" | "cli") {
  const root = tmpDir();
  const template = makeCliTemplate(tmpDir());
  const bin = path.join(root, "bin");
  // exec: the shell becomes sleep, which a SIGINT or SIGTERM ends like it ends npm.
  write(bin, "npm", "#!/bin/sh\necho npm-started\nexec sleep 60\n", 0o755);
  const env: NodeJS.ProcessEnv = { ...process.env, PATH: `${bin}${path.delimiter}${process.env.PATH}`, CREATE_GRPC_SVC_TEMPLATE: template };
  const cli = spawn(process.execPath, [path.join(REPO, "dist/generator/cli.js"), "int-svc", "--yes"], {
    cwd: root,
    env,
    stdio: ["ignore", "pipe", "pipe"],
    detached: true, // its own process group, like a job in a terminal
  });
  let stdout = "";
  let stderr = "";
  cli.stderr.setEncoding("utf8").on("data", (c: string) => (stderr += c));
  const started = new Promise<void>((resolve) => {
    cli.stdout.setEncoding("utf8").on("data", (c: string) => {
      stdout += c;
      if (stdout.includes("npm-started")) resolve();
    });
  });
  const exited = once(cli, "close") as Promise<[number | null, NodeJS.Signals | null]>;
  await started;
  process.kill(target === "group" ? -cli.pid! : cli.pid!, signal);
  const [code, killedBy] = await exited;
  return { code, killedBy, stdout, stderr, dir: path.join(root, "int-svc") };
}

describe("interrupting npm install", () => {
  it("Ctrl-C (SIGINT to the process group): exit 130, the files are kept, and the message says what was written and how to finish", async () => {
    const r = await interrupted("SIGINT", "group");
    assert.equal(r.killedBy, null, "the CLI handled the signal instead of dying of it");
    assert.equal(r.code, 130, r.stderr);
    assert.match(r.stdout, /Wrote \d+ files to \.\/int-svc\./);
    assert.match(r.stderr, /^create-grpc-svc: npm install was interrupted \(SIGINT\)\. The generated files \(\d+ files in \.\/int-svc\) are kept; to finish, run:\n/m);
    assert.ok(r.stderr.includes(`\n  cd ./int-svc && ${FINISH}\n`), r.stderr);
    assert.ok(fs.existsSync(path.join(r.dir, "package.json")), "the written files are still there");
    assert.ok(!fs.existsSync(path.join(r.dir, ".git")), "git did not run after the interruption");
  });

  it("SIGTERM to the CLI alone is passed on to npm, with the same report", async () => {
    const r = await interrupted("SIGTERM", "cli");
    assert.equal(r.code, 143, r.stderr);
    assert.match(r.stderr, /npm install was interrupted \(SIGTERM\)\. The generated files \(\d+ files in \.\/int-svc\) are kept/);
    assert.ok(r.stderr.includes(`cd ./int-svc && ${FINISH}`));
  });
});
