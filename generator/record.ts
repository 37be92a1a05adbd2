// `.create-grpc-svc.json`: what made a generated repo (scaffolder version and the options that shape the
// template), so `create-grpc-svc update` can render the same repo again at that version and at the new one.
// Only options that change rendered files are recorded; never secrets, never install/git.
import { AUTH_MODES, type AuthMode, parsePort } from "./args.js";
import type { Choices } from "./env-file.js";
import { UsageError } from "./errors.js";
import { nameProblem } from "./names.js";

export const RECORD_FILE = ".create-grpc-svc.json";

export interface RecordedOptions {
  name: string;
  auth: AuthMode;
  /** null: no admin port (metrics, swagger, pprof on the HTTP port). */
  adminPort: number | null;
  unixSocket: boolean;
  sse: boolean;
}

export interface GenerationRecord {
  version: string;
  options: RecordedOptions;
}

const NOTE = "Written by create-grpc-svc. `npm create grpc-svc@latest -- update` reads it to update the framework; keep it committed.";

export function recordFor(version: string, name: string, c: Choices): GenerationRecord {
  return {
    version,
    options: { name, auth: c.auth, adminPort: c.adminPort ?? null, unixSocket: c.unixSocket, sse: c.sse },
  };
}

export function stringifyRecord(r: GenerationRecord): string {
  return `${JSON.stringify({ $comment: NOTE, ...r }, null, 2)}\n`;
}

// A version is handed to `npm pack create-grpc-svc@<version>`: only a plain semver, never a tag, range, URL,
// git or file spec, which would make a crafted record fetch (and npm prepare) code from elsewhere.
const SEMVER = /^(0|[1-9]\d*)\.(0|[1-9]\d*)\.(0|[1-9]\d*)(-[0-9A-Za-z.-]+)?(\+[0-9A-Za-z.-]+)?$/;

export const isExactVersion = (v: string): boolean => SEMVER.test(v);

/** Semver precedence of two exact versions: negative, 0 or positive. Build metadata is ignored. */
export function compareVersions(a: string, b: string): number {
  const parse = (v: string) => {
    const [core = "", pre] = v.split("+")[0]?.split(/-(.*)/s) ?? [];
    return { nums: core.split(".").map(Number), pre: pre ? pre.split(".") : [] };
  };
  const [x, y] = [parse(a), parse(b)];
  for (let i = 0; i < 3; i++) if (x.nums[i] !== y.nums[i]) return (x.nums[i] ?? 0) - (y.nums[i] ?? 0);
  // A pre-release sorts before its release; identifiers compare numerically when both are numbers.
  if (x.pre.length === 0 || y.pre.length === 0) return y.pre.length - x.pre.length;
  for (let i = 0; i < Math.max(x.pre.length, y.pre.length); i++) {
    const [p, q] = [x.pre[i], y.pre[i]];
    if (p === undefined || q === undefined) return p === undefined ? -1 : 1;
    if (p === q) continue;
    const [pn, qn] = [/^\d+$/.test(p), /^\d+$/.test(q)];
    if (pn && qn) return Number(p) - Number(q);
    if (pn !== qn) return pn ? -1 : 1;
    return p < q ? -1 : 1;
  }
  return 0;
}

/** Parses and checks a record; every problem is a one-line UsageError naming the field. */
export function parseRecord(text: string): GenerationRecord {
  const bad = (what: string) => new UsageError(`${RECORD_FILE} is invalid: ${what}`);
  let raw: unknown;
  try {
    raw = JSON.parse(text);
  } catch (e) {
    throw bad(`not JSON (${(e as Error).message.split("\n")[0]})`);
  }
  if (!isObject(raw)) throw bad("expected an object");
  const { version, options: o } = raw;
  if (typeof version !== "string" || !isExactVersion(version)) throw bad(`"version" must be an exact version like 1.2.3, got ${JSON.stringify(version)}`);
  if (!isObject(o)) throw bad(`"options" must be an object`);
  if (typeof o.name !== "string" || nameProblem(o.name)) throw bad(`"options.name" ${JSON.stringify(o.name)} is not a valid service name`);
  if (typeof o.auth !== "string" || !(AUTH_MODES as readonly string[]).includes(o.auth)) {
    throw bad(`"options.auth" must be one of ${AUTH_MODES.join(", ")}`);
  }
  let adminPort: number | null = null;
  if (o.adminPort !== null && o.adminPort !== undefined) {
    try {
      adminPort = parsePort(String(o.adminPort));
    } catch (e) {
      throw bad(`"options.adminPort": ${(e as Error).message.replace(/^invalid --admin-port /, "")}`);
    }
  }
  if (typeof o.unixSocket !== "boolean") throw bad(`"options.unixSocket" must be true or false`);
  if (typeof o.sse !== "boolean") throw bad(`"options.sse" must be true or false`);
  return { version, options: { name: o.name, auth: o.auth as AuthMode, adminPort, unixSocket: o.unixSocket, sse: o.sse } };
}

/** The recorded options as render choices (nothing is installed or committed by an update's renders). */
export function choicesOf(o: RecordedOptions): Choices {
  const c: Choices = { auth: o.auth, unixSocket: o.unixSocket, sse: o.sse, install: false, git: false };
  if (o.adminPort !== null) c.adminPort = o.adminPort;
  return c;
}

function isObject(v: unknown): v is Record<string, unknown> {
  return typeof v === "object" && v !== null && !Array.isArray(v);
}
