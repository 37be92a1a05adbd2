// The four generators: what each asks (with the make variable each answer comes from) and what it plans. The
// same checks run on a typed answer (asked again) and on a value given on the command line (refused).
import { KINDS, rpcNameProblem } from "./names.js";
import { type PartKind, partProblem, partServiceProblem, planPart } from "./new-part.js";
import { defaultHttp, httpProblem, kindProblem, planRpc, rpcServiceProblem, rpcTakenProblem } from "./new-rpc.js";
import { planService, serviceProblem } from "./new-service.js";
import type { Change } from "./repo.js";

export type Answers = Record<string, string>;

export interface Question {
  /** The command-line option (`--name`) and answer key. */
  key: string;
  /** The Makefile variable it comes from, for messages: NAME. */
  variable: string;
  message: string;
  /** Required ones are asked whenever missing; optional ones only when the generator was given no value at all. */
  required: boolean;
  choices?: readonly string[];
  /** Taken when the answer is empty. */
  default?: (answers: Answers) => string;
  /** Why the value cannot be used, or undefined; sees the answers given before it. */
  check(value: string, answers: Answers): string | undefined;
}

export interface Generator {
  /** `make new-<name>` */
  name: string;
  description: string;
  questions: Question[];
  plan(root: string, answers: Answers): Change[];
}

const part = (kind: PartKind, root: string): Generator => ({
  name: kind,
  description:
    kind === "interceptor"
      ? "an interceptor that runs first on every call, registered in a service's preStart"
      : "a periodic background worker (every()), registered in a service's workers",
  questions: [
    { key: "name", variable: "NAME", message: `${kind} name (kebab case)`, required: true, check: (v) => partProblem(root, v, kind) },
    {
      key: "service",
      variable: "SERVICE",
      message: "Register it in service (empty: the first one src/main.ts runs)",
      required: false,
      check: (v) => partServiceProblem(root, v),
    },
  ],
  plan: (r, a) => planPart(r, { name: a.name ?? "", service: a.service ?? "" }, kind),
});

/** The generators, checking against the repository at `root`. */
export function catalog(root: string): Generator[] {
  return [
    {
      name: "service",
      description: "a service: its proto, handlers, a test, registered in src/main.ts",
      questions: [
        {
          key: "name",
          variable: "NAME",
          message: "Service name (kebab case, e.g. billing)",
          required: true,
          check: (v) => serviceProblem(root, v),
        },
      ],
      plan: (r, a) => planService(r, a.name ?? ""),
    },
    {
      name: "rpc",
      description: "an RPC of any kind in a service: request/response messages, a handler stub, a test",
      questions: [
        { key: "service", variable: "SERVICE", message: "Service (kebab case)", required: true, check: (v) => rpcServiceProblem(root, v) },
        {
          key: "name",
          variable: "NAME",
          message: "RPC name (PascalCase, e.g. Refund)",
          required: true,
          check: (v, a) => rpcNameProblem(v) ?? rpcTakenProblem(root, a.service ?? "", v),
        },
        { key: "kind", variable: "KIND", message: "Kind", required: true, choices: KINDS, check: (v) => kindProblem(v) },
        {
          key: "http",
          variable: "HTTP",
          message: "HTTP rule (verb:/path, or none)",
          required: false,
          default: (a) => defaultHttp(a.service ?? "", a.name ?? ""),
          check: (v, a) => httpProblem(v, a.kind || "unary"),
        },
      ],
      plan: (r, a) => planRpc(r, { service: a.service ?? "", name: a.name ?? "", kind: a.kind ?? "", http: a.http ?? "" }),
    },
    part("interceptor", root),
    part("worker", root),
  ];
}
