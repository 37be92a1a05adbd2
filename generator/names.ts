// Derives every identifier the template is renamed to from the package name.
import { builtinModules } from "node:module";
import { UsageError } from "./errors.js";

export interface Names {
  /** npm package name, also used for Kubernetes/Grafana names: `order-book-service`. */
  name: string;
  /** Proto package root and directory, lower case: `orderbook`. */
  stem: string;
  /** PascalCase of the name's words without the suffix: `OrderBook`. */
  pascal: string;
  /** Upper-case stem for constants/env prefixes: `ORDERBOOK`. */
  upper: string;
  /** `orderbook.v1` */
  protoPackage: string;
  /** `OrderBookService` */
  service: string;
}

const KEBAB = /^[a-z][a-z0-9]*(-[a-z0-9]+)*$/;
const MAX_NAME = 214; // npm's limit

// The vendored third-party protos live in proto/google, proto/grpc and proto/buf; a stem equal to one would merge with them.
const RESERVED_STEMS = new Set(["google", "grpc", "buf", "grpcsvc"]);

// The stem may appear as a bare identifier in the template's TypeScript, so reserved words would not compile.
const JS_RESERVED = new Set(
  ("break case catch class const continue debugger default delete do else enum export extends false finally for " +
    "function if import in instanceof new null return super switch this throw true try typeof var void while with " +
    "await implements interface let package private protected public static yield")
    .split(" "),
);

/** Returns why `name` is unusable, or undefined when it is fine. Shared by flag validation and the prompt. */
export function nameProblem(name: string): string | undefined {
  if (name.length === 0) return "the service name is empty";
  if (name.length > MAX_NAME) return `name is longer than ${MAX_NAME} characters`;
  if (!KEBAB.test(name)) {
    return `invalid name "${name}": use lower-case kebab case, e.g. demo-svc (letters, digits and single dashes, starting with a letter)`;
  }
  if (builtinModules.includes(name)) return `invalid name "${name}": it is a Node.js core module name`;
  const stem = stemOf(name);
  if (stem === "" || /^[0-9]/.test(stem)) return `invalid name "${name}": the proto package "${stem}" must start with a letter`;
  if (RESERVED_STEMS.has(stem)) {
    return `invalid name "${name}": the proto package "${stem}" clashes with the vendored proto/${stem}/ directory`;
  }
  if (JS_RESERVED.has(stem)) return `invalid name "${name}": "${stem}" is a reserved word in TypeScript`;
  // The proto package is <stem>.v1: a stem that is itself a version would make v1.v1.
  if (/^v\d+((alpha|beta)\d*)?$/.test(stem)) return `invalid name "${name}": "${stem}" is a version, and the proto package adds one (${stem}.v1)`;
  return undefined;
}

/** The name's kebab words without a trailing -svc/-service (only one suffix is dropped). */
function baseWords(name: string): string[] {
  return name.replace(/-(svc|service)$/, "").split("-");
}

function stemOf(name: string): string {
  return baseWords(name).join("").replace(/[^a-z0-9]/g, "");
}

/** Throws UsageError for an unusable name. */
export function deriveNames(name: string): Names {
  const problem = nameProblem(name);
  if (problem) throw new UsageError(problem);
  const stem = stemOf(name);
  const pascal = baseWords(name)
    .map((w) => w.charAt(0).toUpperCase() + w.slice(1))
    .join("");
  return {
    name,
    stem,
    pascal,
    upper: stem.toUpperCase(),
    protoPackage: `${stem}.v1`,
    service: `${pascal}Service`,
  };
}
