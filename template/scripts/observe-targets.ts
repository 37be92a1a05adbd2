// Writes the Prometheus target of `make observe` (compose.yaml): the port that serves this service's /metrics,
// ADMIN_PORT when it is set and HTTP_PORT otherwise, read from the environment and .env like `make run` does.
// Prometheus reads the file through file_sd_configs and picks up a rewrite without a restart.
//
//   node --env-file-if-exists=.env --import tsx scripts/observe-targets.ts .tmp/observe/targets.json
import { mkdirSync, writeFileSync } from "node:fs";
import { dirname } from "node:path";
import { loadConfigOrExit } from "../src/framework/config/load.js";

function fail(message: string): never {
  process.stderr.write(`observe: ${message}\n`);
  process.exit(1);
}

const [out] = process.argv.slice(2);
if (!out) fail("usage: observe-targets.ts <targets.json>");

const config = loadConfigOrExit("observe");
const port = config.ADMIN_PORT ?? config.HTTP_PORT;
if (port === 0)
  fail(`${config.ADMIN_PORT === undefined ? "HTTP_PORT" : "ADMIN_PORT"} is 0 (a free port picked at start): set a fixed port to scrape`);

// The labels the dashboard's variables select on (Kubernetes sets them in a cluster).
const targets = [{ targets: [`host.docker.internal:${port}`], labels: { namespace: "local", pod: "local" } }];
mkdirSync(dirname(out), { recursive: true });
writeFileSync(out, `${JSON.stringify(targets, null, 2)}\n`);
process.stdout.write(
  `Prometheus scrapes http://host.docker.internal:${port}/metrics (${config.ADMIN_PORT === undefined ? "HTTP_PORT" : "ADMIN_PORT"})\n`,
);
