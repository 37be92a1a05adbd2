// Interactive questions for whatever the flags left open. Imported lazily by cli.ts: @inquirer/prompts
// is only loaded when a terminal is attached.
import path from "node:path";
import { confirm, input, select } from "@inquirer/prompts";
import { type AuthMode, type CliArgs, parsePort } from "./args.js";
import type { Choices } from "./env-file.js";
import { deriveNames, nameProblem } from "./names.js";
import { choicesFromArgs, type Plan, targetProblem } from "./plan.js";

export async function askForPlan(args: CliArgs, cwd: string): Promise<Plan> {
  let targetDir: string;
  let name: string;
  if (args.dir === undefined) {
    // No directory: the name is asked (or --name used) and the directory is named after it.
    name =
      args.name ??
      (await input({
        message: "Service name (npm package, kebab case):",
        default: "my-svc",
        validate: (v) => nameProblem(v.trim()) ?? targetProblem(path.resolve(cwd, v.trim()), args.force) ?? true,
      })).trim();
    targetDir = path.resolve(cwd, name);
  } else {
    targetDir = path.resolve(cwd, args.dir);
    const base = path.basename(targetDir);
    name =
      args.name ??
      (await input({
        message: "Service name (npm package, kebab case):",
        ...(nameProblem(base) ? {} : { default: base }),
        validate: (v) => nameProblem(v.trim()) ?? true,
      })).trim();
  }

  const d = choicesFromArgs(args);
  const auth: AuthMode =
    args.auth ??
    (await select<AuthMode>({
      message: "Authentication:",
      default: d.auth,
      choices: [
        { value: "none", name: "none", description: "Off; can be turned on later with JWT_SECRET or API_KEYS" },
        { value: "jwt", name: "JWT", description: "HS256 bearer tokens; a random JWT_SECRET goes to .env" },
        { value: "api-key", name: "API key", description: "x-api-key header; a random key goes to API_KEYS in .env" },
        { value: "both", name: "JWT or API key", description: "Either credential is accepted" },
      ],
    }));
  let adminPort = args.adminPort;
  if (adminPort === undefined) {
    const raw = (
      await input({
        message: "Admin port for /metrics, /swagger/ and /debug/pprof/ (empty: keep them on the HTTP port):",
        validate: (v) => portProblem(v.trim()) ?? true,
      })
    ).trim();
    if (raw !== "") adminPort = parsePort(raw);
  }
  const unixSocket =
    args.unixSocket ??
    (await select<boolean>({
      message: "Gateway to gRPC transport:",
      default: d.unixSocket,
      choices: [
        { value: false, name: "TCP loopback" },
        { value: true, name: "Unix socket", description: "Private socket file; falls back to TCP if it cannot be made" },
      ],
    }));
  const sse = args.sse ?? (await confirm({ message: "Server-sent events for streaming RPCs?", default: d.sse }));
  const install = args.install ?? (await confirm({ message: "Run npm install?", default: d.install }));
  const git = args.git ?? (await confirm({ message: "Create a git repository with an initial commit?", default: d.git }));

  const choices: Choices = { auth, unixSocket, sse, install, git };
  if (adminPort !== undefined) choices.adminPort = adminPort;
  return { targetDir, names: deriveNames(name), choices };
}

function portProblem(raw: string): string | undefined {
  if (raw === "") return undefined;
  try {
    parsePort(raw);
    return undefined;
  } catch (err) {
    return (err as Error).message.replace(/^invalid --admin-port /, "invalid port ");
  }
}
