// Builds the framework's fixture service (test/framework/fixtures/fixture-main.ts: the test-only API of
// test/proto/fixture/) the way `npm run build` builds yours, with scripts/build.ts: one esbuild bundle,
// source maps and a filled compile cache, into dist-bench/ or the folder given. The benchmarks run it
// (`make bench` and `make soak` build it first), so they measure the framework whatever your proto says.
//
//   node --import tsx bench/build.ts [outdir=dist-bench]    # e.g. dist-a for an A/B with bench/ab.ts
import { spawnSync } from "node:child_process";
import path from "node:path";

const ROOT = path.resolve(import.meta.dirname, "..");
const outdir = process.argv[2] ?? "dist-bench";
const r = spawnSync(
  process.execPath,
  ["--import", "tsx", path.join(ROOT, "scripts/build.ts"), outdir, "test/framework/fixtures/fixture-main.ts"],
  { cwd: ROOT, stdio: "inherit" },
);
process.exit(r.status ?? 1);
