// The Node versions both repositories name agree: .nvmrc (the default, an LTS), the Docker base image, CI, and
// `engines`, which must be the real floor of the installed dependencies — low enough for every one of them,
// and not lower than what one of them needs.
import assert from "node:assert/strict";
import fs from "node:fs";
import path from "node:path";
import { test } from "node:test";
import { fileURLToPath } from "node:url";
import semver from "semver";

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");
const template = path.join(root, "template");
const read = (dir: string, rel: string) => fs.readFileSync(path.join(dir, rel), "utf8");

interface Manifest {
  name: string;
  version: string;
  engines?: { node?: string };
}

/** Every package installed under dir/node_modules (scoped and nested ones too), read once. */
function installed(dir: string): Manifest[] {
  const lock = JSON.parse(read(dir, "node_modules/.package-lock.json")) as { packages: Record<string, unknown> };
  return Object.keys(lock.packages)
    .filter((p) => p.startsWith("node_modules/"))
    .map((p) => JSON.parse(read(dir, `${p}/package.json`)) as Manifest);
}

/** The lowest version `engines.node` admits: the floor a user may run. */
function floorOf(dir: string): string {
  const range = (JSON.parse(read(dir, "package.json")) as Manifest).engines?.node;
  assert.ok(range, `${dir}/package.json states engines.node`);
  const floor = semver.minVersion(range);
  assert.ok(floor, range);
  return floor.version;
}

const rejecting = (pkgs: Manifest[], version: string) =>
  pkgs.filter((p) => p.engines?.node && !semver.satisfies(version, p.engines.node)).map((p) => `${p.name}@${p.version} (${p.engines?.node})`);

test(".nvmrc names Node 24 in the scaffolder and in the template (so in every generated repo)", () => {
  assert.equal(read(root, ".nvmrc").trim(), "24");
  assert.equal(read(template, ".nvmrc").trim(), "24");
});

test("the Docker image builds on the slim Debian image of the Node that .nvmrc names", () => {
  const arg = /^ARG NODE_IMAGE=(\S+)$/m.exec(read(template, "Dockerfile"));
  assert.equal(arg?.[1], `node:${read(template, ".nvmrc").trim()}-bookworm-slim`);
});

for (const [label, dir] of [
  ["the template's", template],
  ["the scaffolder's", root],
] as const) {
  test(`${label} engines floor admits every installed dependency, and is no lower than one of them needs`, () => {
    const floor = floorOf(dir);
    const pkgs = installed(dir);
    assert.ok(pkgs.length > 50, `node_modules of ${dir} is installed`);
    assert.deepEqual(rejecting(pkgs, floor), [], `packages that refuse Node ${floor}`);
    // One patch below the floor (or the previous minor's last), some dependency refuses: the floor is real.
    const below = semver.patch(floor) > 0 ? `${semver.major(floor)}.${semver.minor(floor)}.${semver.patch(floor) - 1}` : `${semver.major(floor)}.${semver.minor(floor) - 1}.99`;
    assert.notDeepEqual(rejecting(pkgs, below), [], `nothing needs Node ${floor}: lower engines.node`);
    // Node 20 reached end of life: nobody may be told it works.
    assert.ok(semver.major(floor) >= 22, floor);
  });
}

test("CI installs Node 24 when the machine's is older, and runs the template's suites on the engines floor", () => {
  const ci = read(root, ".ci/run");
  assert.match(ci, /node_bin 24/);
  assert.match(ci, /node_bin 22\)/);
  assert.match(ci, /make -C template test test-framework/);
  assert.equal(semver.major(floorOf(template)), 22, "the floor CI runs is the template's engines major");
});
