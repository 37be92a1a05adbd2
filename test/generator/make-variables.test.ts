// The generated repository's `make new-*` targets hand NAME, SERVICE, KIND and HTTP to the generators as text:
// quotes, backticks, $(…) and $$(…) in them run nothing, and the generator refuses the bad value (exit non-zero).
// Real make and generators in a scaffolded repository (the template's node_modules stands in, so no npm install).
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import fs from "node:fs";
import path from "node:path";
import { before, describe, it } from "node:test";
import { deriveNames } from "../../generator/names.js";
import { render } from "../../generator/render.js";
import { makeCliTemplate, REAL_TEMPLATE, tmpDir } from "./helpers.js";

describe("make new-* with hostile variable values (pay-svc)", () => {
  let out = "";
  before(async () => {
    const root = tmpDir();
    out = path.join(root, "pay-svc");
    await render({
      templateDir: makeCliTemplate(root),
      targetDir: out,
      names: deriveNames("pay-svc"),
      choices: {
        auth: "none",
        unixSocket: false,
        sse: true,
        install: false,
        git: false,
      },
      secret: () => "SECRET",
    });
    fs.symlinkSync(
      path.join(REAL_TEMPLATE, "node_modules"),
      path.join(out, "node_modules"),
      "dir",
    );
  });

  /** Runs make in the scaffolded repository (its installed dependencies taken as up to date). */
  const make = (args: string[]) =>
    spawnSync("make", ["-o", "node_modules/.package-lock.json", ...args], {
      cwd: out,
      encoding: "utf8",
      timeout: 120_000,
    });

  const hostile = (marker: string) => [
    `X"; touch ${marker}-dq; echo "`,
    `X'; touch ${marker}-sq; echo '`,
    `X\`touch ${marker}-bt\``,
    `X$$(touch ${marker}-ds)`,
    `X$(touch ${marker}-ms)`,
  ];

  // Every hostile shape on one variable; the others (each a generator start, seconds apiece) with two shapes.
  for (const [target, variable, rest, shapes] of [
    ["new-rpc", "NAME", ["SERVICE=pay", "KIND=unary"], 5],
    ["new-rpc", "HTTP", ["SERVICE=pay", "NAME=Refund", "KIND=unary"], 2],
    ["new-rpc", "SERVICE", ["NAME=Refund", "KIND=unary"], 2],
    ["new-rpc", "KIND", ["SERVICE=pay", "NAME=Refund"], 2],
    ["new-service", "NAME", [], 2],
    ["new-interceptor", "NAME", [], 2],
    ["new-worker", "SERVICE", ["NAME=reindex"], 2],
  ] as const) {
    it(`${target} ${variable}=… with quotes, backticks and $(…) runs nothing and is refused`, () => {
      const marker = path.join(out, `pwned-${target}-${variable}`);
      for (const value of hostile(marker).slice(0, shapes)) {
        const r = make([target, ...rest, `${variable}=${value}`]);
        const created = fs
          .readdirSync(out)
          .filter((f) => f.startsWith("pwned-"));
        assert.deepEqual(
          created,
          [],
          `${variable}=${value} ran a command: ${r.stdout}${r.stderr}`,
        );
        assert.notEqual(
          r.status,
          0,
          `${variable}=${value} was accepted: ${r.stdout}${r.stderr}`,
        );
      }
    });
  }
});
