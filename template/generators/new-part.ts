// `make new-interceptor` and `make new-worker`: the part and its test, registered in a service's preStart
// (interceptors, outermost first) or its workers list.
import path from "node:path";
import { partNameProblem, partNames, serviceNameProblem, serviceNames } from "./names.js";
import { type Change, exists, GeneratorError, importPath, MAIN, read } from "./repo.js";
import { functionOf, prependCall, property, Source } from "./source-edit.js";
import { interceptorSource, interceptorTest, type PartTemplateData, workerSource, workerTest } from "./templates/parts.js";

export type PartKind = "interceptor" | "worker";

export interface PartAnswers {
  name: string;
  /** Kebab name of the service to register it in; empty for the first one in src/main.ts. */
  service?: string;
}

/** The service file an interceptor or worker is registered in: SERVICE's, or the first one `run([...])` lists. */
function targetService(root: string, service: string): { file: string; exportName: string } {
  if (service !== "") {
    const problem = partServiceProblem(root, service);
    if (problem) throw new GeneratorError(problem);
    const svc = serviceNames(service);
    return { file: svc.sourcePath, exportName: svc.exportName };
  }
  const main = new Source(MAIN, read(root, MAIN));
  const first = main.runList().elements[0];
  if (first?.type !== "Identifier") throw new GeneratorError(`${MAIN}: run([...]) lists no service; pass SERVICE=<name>`);
  const from = main.importSource(first.name);
  if (!from?.startsWith(".")) throw new GeneratorError(`${MAIN}: cannot tell which file ${first.name} comes from; pass SERVICE=<name>`);
  const file = path.posix.join(path.posix.dirname(MAIN), from).replace(/\.js$/, ".ts");
  if (!exists(root, file)) throw new GeneratorError(`${file} (imported by ${MAIN}) does not exist; pass SERVICE=<name>`);
  return { file, exportName: first.name };
}

/** SERVICE of new-interceptor / new-worker: empty (the first one src/main.ts runs) or a service with handlers. */
export function partServiceProblem(root: string, service: string): string | undefined {
  if (service === "") return undefined;
  const problem = serviceNameProblem(service, "SERVICE");
  if (problem) return problem;
  const { sourcePath } = serviceNames(service);
  return exists(root, sourcePath) ? undefined : `no service ${service}: ${sourcePath} does not exist`;
}

export function partProblem(root: string, name: string, kind: PartKind): string | undefined {
  const problem = partNameProblem(name);
  if (problem) return problem;
  const part = partNames(name, kind);
  for (const f of [part.sourcePath, part.testPath]) if (exists(root, f)) return `${kind} ${name} exists already: ${f}`;
  return undefined;
}

export function planPart(root: string, answers: PartAnswers, kind: PartKind): Change[] {
  const problem = partProblem(root, answers.name, kind);
  if (problem) throw new GeneratorError(problem);
  const part = partNames(answers.name, kind);
  const target = targetService(root, answers.service ?? "");
  const source = new Source(target.file, read(root, target.file));
  if (source.importedNames().has(part.exportName)) throw new GeneratorError(`${target.file} imports a ${part.exportName} already`);
  const options = source.serviceOptions();

  if (kind === "interceptor") {
    const hook = property(options, "preStart");
    if (!hook) {
      source.appendProperty(options, `preStart(app) {\napp.prepend(${part.exportName});\n}`);
    } else {
      const fn = functionOf(hook);
      if (!fn?.param)
        throw new GeneratorError(`${target.file}: preStart must be a function with an app parameter, e.g. preStart(app) { ... }`);
      const call = prependCall(fn.body);
      // First argument = outermost: the new interceptor runs before the ones already there.
      if (call?.arguments[0]) source.insert(call.arguments[0].start!, `${part.exportName}, `);
      else source.insert(fn.body.start! + 1, `\n${fn.param}.prepend(${part.exportName});`);
    }
  } else {
    const workers = property(options, "workers");
    if (!workers) source.appendProperty(options, `workers: [${part.exportName}]`);
    else if (workers.type === "ObjectProperty" && workers.value.type === "ArrayExpression")
      source.appendElement(workers.value, part.exportName);
    else throw new GeneratorError(`${target.file}: workers must be an array literal ([ ... ]) to add ${part.exportName} to it`);
  }
  source.addImport([part.exportName], importPath(target.file, part.sourcePath));

  const data: PartTemplateData = { part, target: target.exportName, serviceModule: target.file.replace(/\.ts$/, ".js") };
  const [partSource, partTest] = kind === "interceptor" ? [interceptorSource, interceptorTest] : [workerSource, workerTest];
  return [
    { path: part.sourcePath, text: partSource(data), create: true },
    { path: part.testPath, text: partTest(data), create: true },
    { path: target.file, text: source.result(), create: false },
  ];
}
