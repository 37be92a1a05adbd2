// `make new-service`: a service's proto, handlers and test, added to `run([...])` in src/main.ts.
import { serviceNameProblem, serviceNames } from "./names.js";
import { buildProtos } from "./proto-file.js";
import { type Change, exists, GeneratorError, importPath, MAIN, read } from "./repo.js";
import { Source } from "./source-edit.js";
import { serviceProto, serviceSource, serviceTest } from "./templates/service.js";

export function serviceProblem(root: string, name: string): string | undefined {
  const problem = serviceNameProblem(name);
  if (problem) return problem;
  const svc = serviceNames(name);
  for (const f of [svc.protoPath, svc.sourcePath, svc.testPath]) if (exists(root, f)) return `service ${svc.kebab} exists already: ${f}`;
  return undefined;
}

export function planService(root: string, name: string): Change[] {
  const problem = serviceProblem(root, name);
  if (problem) throw new GeneratorError(problem);
  const svc = serviceNames(name);
  const main = new Source(MAIN, read(root, MAIN));
  if (main.importedNames().has(svc.exportName)) throw new GeneratorError(`${MAIN} imports a ${svc.exportName} already`);
  if (buildProtos(root).some((f) => f.package === svc.protoPackage))
    throw new GeneratorError(`proto package ${svc.protoPackage} exists already`);
  main.appendElement(main.runList(), svc.exportName);
  main.addImport([svc.exportName], importPath(MAIN, svc.sourcePath));
  return [
    { path: svc.protoPath, text: serviceProto(svc), create: true },
    { path: svc.sourcePath, text: serviceSource(svc), create: true },
    { path: svc.testPath, text: serviceTest(svc), create: true },
    { path: MAIN, text: main.result(), create: false },
  ];
}
