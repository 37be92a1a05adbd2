#!/usr/bin/env node
// Entry point: parse → (ask) → check → render → install/git → summary. Heavy modules (node-plop,
// @inquirer/prompts) are imported only on the paths that need them, so --help and errors stay instant.
import path from "node:path";
import { parseCliArgs, parseUpdateArgs, UPDATE_USAGE, USAGE } from "./args.js";
import type { Choices } from "./env-file.js";
import { reportError, StepError, UsageError } from "./errors.js";
import { deriveNames } from "./names.js";
import { assertTemplateReady, defaultTemplateDir, packageVersion } from "./package-root.js";
import { assertTargetWritable, type Plan, planWithoutPrompts } from "./plan.js";
import { runSteps, shellQuote, stepsFor } from "./post-steps.js";

// Test/development hook: render from another template directory (e.g. a fixture) instead of ./template.
const TEMPLATE_ENV = "CREATE_GRPC_SVC_TEMPLATE";

const out = (s: string) => void process.stdout.write(s);
const err = (s: string) => void process.stderr.write(s);

export async function main(argv: readonly string[]): Promise<number> {
  try {
    if (argv[0] === "update") return await update(argv.slice(1));
    const args = parseCliArgs(argv);
    if (args.help) return out(USAGE), 0;
    if (args.version) return out(`${packageVersion()}\n`), 0;

    const cwd = process.cwd();
    // Check what the flags already say before asking anything.
    if (args.name !== undefined) deriveNames(args.name);
    if (args.dir !== undefined) assertTargetWritable(path.resolve(cwd, args.dir), args.force);
    const templateDir = process.env[TEMPLATE_ENV] || defaultTemplateDir();
    assertTemplateReady(templateDir);

    const interactive = !args.yes && process.stdin.isTTY === true;
    const plan: Plan = interactive
      ? await (await import("./prompts.js")).askForPlan(args, cwd)
      : planWithoutPrompts(args, cwd);
    if (isInside(plan.targetDir, templateDir)) throw new UsageError(`cannot write into the template itself (${templateDir})`);
    assertTargetWritable(plan.targetDir, args.force);

    const { render } = await import("./render.js");
    const { files } = await render({ templateDir, ...plan, version: packageVersion() });
    const shown = displayPath(cwd, plan.targetDir);
    const steps = stepsFor(plan.choices);
    if (steps.length > 0) out(`Wrote ${files} files to ${shown}.\n`);
    if (plan.choices.install) out("Installing dependencies with npm...\n");
    const warnings = await runSteps(steps, plan.targetDir, shown).catch((e: unknown) => {
      if (e instanceof StepError) e.written = `${files} files in ${shown}`;
      throw e;
    });
    for (const w of warnings) err(`create-grpc-svc: warning: ${w}\n`);
    out(summary(plan, files, shown));
    return 0;
  } catch (e) {
    return reportError(e, err);
  }
}

/** `update`: a sub-command, so a directory named "update" is written as `./update`. */
async function update(argv: readonly string[]): Promise<number> {
  const args = parseUpdateArgs(argv);
  if (args.help) return out(UPDATE_USAGE), 0;
  const templateDir = process.env[TEMPLATE_ENV] || defaultTemplateDir();
  assertTemplateReady(templateDir);
  const { runUpdate } = await import("./update.js");
  return runUpdate(args, { cwd: process.cwd(), templateDir, version: packageVersion(), out });
}

function isInside(child: string, parent: string): boolean {
  const rel = path.relative(parent, child);
  return rel === "" || (!rel.startsWith("..") && !path.isAbsolute(rel));
}

/** `./demo-svc` for a directory below cwd, else the absolute path. */
function displayPath(cwd: string, target: string): string {
  const rel = path.relative(cwd, target);
  if (rel === "") return ".";
  return rel.startsWith("..") || path.isAbsolute(rel) ? target : `.${path.sep}${rel}`;
}

function summary(plan: Plan, files: number, shown: string): string {
  const { names: n, choices: c } = plan;
  const secrets = secretNames(c);
  const rows: [string, string][] = [
    ["proto", `proto/${n.stem}/v1/${n.stem}.proto (package ${n.protoPackage}, service ${n.service})`],
    ["auth", c.auth === "none" ? "none" : `${c.auth} (${secrets.join(" and ")} in .env)`],
    ["admin port", c.adminPort === undefined ? "none (metrics, swagger, pprof on :9091)" : String(c.adminPort)],
    ["gateway", c.unixSocket ? "Unix socket" : "TCP loopback"],
    ["SSE", c.sse ? "on" : "off"],
    ["npm install", c.install ? "done" : "skipped"],
    ["git", c.git ? "initial commit on main" : "skipped"],
  ];
  const cd = shown === "." ? "" : `cd ${shellQuote(shown)} && `;
  const install = c.install ? "" : "npm install && ";
  return [
    "",
    `Created ${n.name} in ${shown} (${files} files).`,
    ...rows.map(([k, v]) => `  ${k.padEnd(13)}${v}`),
    "",
    "Next steps:",
    `  ${cd}${install}make run     # gRPC on :9090, REST/JSON on :9091`,
    "  make test",
    "",
  ].join("\n");
}

function secretNames(c: Choices): string[] {
  return [
    ...(c.auth === "jwt" || c.auth === "both" ? ["JWT_SECRET"] : []),
    ...(c.auth === "api-key" || c.auth === "both" ? ["API_KEYS"] : []),
  ];
}

process.exitCode = await main(process.argv.slice(2));
