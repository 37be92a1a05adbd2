// A repo may add protos under proto/ at any path the framework does not ship, the public grpc/testing protos
// included: the framework's own test protos live under a path of their own (test/proto/grpcsvc_test/, package
// grpc.testing kept for interop clients), and buf.yaml keeps out of lint only the vendored directories it names,
// so what a team adds is linted. Checked with the real buf on a copy of the repo's protos and buf.yaml.
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { cpSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, test } from "node:test";
import { fileURLToPath } from "node:url";

const ROOT = fileURLToPath(new URL("../..", import.meta.url));
const BIN = join(ROOT, "node_modules/.bin");
const work = mkdtempSync(join(tmpdir(), "user-protos-"));
after(() => rmSync(work, { recursive: true, force: true }));

const buf = (...args: string[]) =>
  spawnSync(join(BIN, "buf"), args, { cwd: work, encoding: "utf8", env: { ...process.env, PATH: `${BIN}:${process.env.PATH}` } });

test("the public grpc/testing protos added under proto/ generate beside the framework's, and are linted", () => {
  for (const rel of ["buf.yaml", "buf.gen.yaml", "test/buf.gen.yaml", "proto", "test/proto"])
    cpSync(join(ROOT, rel), join(work, rel), { recursive: true });
  // grpc/grpc's src/proto/grpc/testing/*.proto, as a team would copy them (the framework's copies, imports as upstream).
  mkdirSync(join(work, "proto/grpc/testing"), { recursive: true });
  for (const name of ["empty", "messages", "test"]) {
    const text = readFileSync(join(ROOT, `test/proto/grpcsvc_test/interop/${name}.proto`), "utf8");
    writeFileSync(join(work, `proto/grpc/testing/${name}.proto`), text.replaceAll("grpcsvc_test/interop/", "grpc/testing/"));
  }
  for (const template of ["buf.gen.yaml", "test/buf.gen.yaml"]) {
    const r = buf("generate", "--template", template);
    assert.equal(r.status, 0, `buf generate --template ${template}: ${r.stderr}`);
  }
  assert.ok(readFileSync(join(work, "src/gen/grpc/testing/test_pb.ts"), "utf8").includes("grpc.testing.TestService"));
  assert.ok(readFileSync(join(work, "test/gen/grpcsvc_test/interop/test_pb.ts"), "utf8").includes("grpc.testing.TestService"));

  const lint = buf("lint");
  assert.doesNotMatch(lint.stderr + lint.stdout, /multiple modules|declared multiple times/);
  // Linted like every proto of the team's: upstream's style is not Buf's STANDARD (they list it under ignore).
  assert.equal(lint.status, 100, lint.stderr);
  assert.match(lint.stdout, /^proto\/grpc\/testing\/messages\.proto:\d+:\d+:/m);
  assert.doesNotMatch(lint.stdout, /^proto\/(google|buf|grpc\/health|grpc\/reflection)\//m, "the vendored protos stay out of lint");
});
