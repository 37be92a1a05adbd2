// Reads the protos the way the compiler does (`buf build`: descriptors with source positions) and inserts an
// RPC into a service at the position buf reports for its closing brace. No pattern matching over the proto.
import { execFileSync } from "node:child_process";
import path from "node:path";
import { fromBinary } from "@bufbuild/protobuf";
import { BinaryReader, WireType } from "@bufbuild/protobuf/wire";
import { type FileDescriptorProto, FileDescriptorSetSchema, type ServiceDescriptorProto } from "@bufbuild/protobuf/wkt";
import { GeneratorError } from "./repo.js";

// One build per run: the prompts' checks and the plan read the same protos (apply() forgets them).
const built = new Map<string, FileDescriptorProto[]>();

export function forgetProtos(): void {
  built.clear();
}

/** Every file of the `proto/` module (imports included), compiled by buf. */
export function buildProtos(root: string): FileDescriptorProto[] {
  let files = built.get(root);
  if (!files) built.set(root, (files = compileProtos(root)));
  return files;
}

function compileProtos(root: string): FileDescriptorProto[] {
  let bytes: Buffer;
  try {
    bytes = execFileSync(path.join(root, "node_modules/.bin/buf"), ["build", "proto", "-o", "-"], {
      cwd: root,
      stdio: ["ignore", "pipe", "pipe"],
      maxBuffer: 256 * 1024 * 1024,
    });
  } catch (err) {
    const stderr = String((err as { stderr?: Buffer }).stderr ?? err).trim();
    throw new GeneratorError(`buf build failed, fix the protos first: ${stderr.split("\n")[0]}`);
  }
  return fromBinary(FileDescriptorSetSchema, bytes).file;
}

export interface ServiceLocation {
  file: FileDescriptorProto;
  service: ServiceDescriptorProto;
  index: number;
}

export function findService(files: FileDescriptorProto[], fileName: string, serviceName: string): ServiceLocation | undefined {
  const file = files.find((f) => f.name === fileName);
  const index = file?.service.findIndex((s) => s.name === serviceName) ?? -1;
  return file && index >= 0 ? { file, service: file.service[index]!, index } : undefined;
}

/** Top-level and nested message names of a proto package, for duplicate checks. */
export function messageNames(files: FileDescriptorProto[], protoPackage: string): Set<string> {
  const names = new Set<string>();
  for (const f of files) if (f.package === protoPackage) for (const m of f.messageType) names.add(m.name);
  return names;
}

/** `google.api.http`'s extension number on MethodOptions. */
const HTTP_EXTENSION = 72295728;
/** HttpRule's pattern fields: get, put, post, delete, patch (custom is 8); additional_bindings is 11. */
const VERB_FIELDS: Record<number, string> = { 2: "GET", 3: "PUT", 4: "POST", 5: "DELETE", 6: "PATCH" };

/** `VERB /path` of an HttpRule and of its additional bindings, read from its wire bytes. */
function ruleRoutes(bytes: Uint8Array): string[] {
  const routes: string[] = [];
  const r = new BinaryReader(bytes);
  while (r.pos < r.len) {
    const [no, wt] = r.tag();
    if (VERB_FIELDS[no] !== undefined && wt === WireType.LengthDelimited) routes.push(`${VERB_FIELDS[no]} ${r.string()}`);
    else if (no === 8 && wt === WireType.LengthDelimited) {
      const custom = new BinaryReader(r.bytes());
      let kind = "";
      let route = "";
      while (custom.pos < custom.len) {
        const [cno, cwt] = custom.tag();
        if (cno === 1 && cwt === WireType.LengthDelimited) kind = custom.string();
        else if (cno === 2 && cwt === WireType.LengthDelimited) route = custom.string();
        else custom.skip(cwt);
      }
      routes.push(`${kind.toUpperCase()} ${route}`);
    } else if (no === 11 && wt === WireType.LengthDelimited) routes.push(...ruleRoutes(r.bytes()));
    else r.skip(wt);
  }
  return routes;
}

/** A route's shape: its verb and path with every `{variable}` alike, as the gateway's router matches it. */
export const routeShape = (route: string) => route.replace(/\{[^}]*\}/g, "{}");

/** Every HTTP route of every method in the protos, as `VERB /path` → `package.Service.Method`. */
export function httpRoutes(files: FileDescriptorProto[]): Map<string, string> {
  const routes = new Map<string, string>();
  for (const f of files) {
    for (const s of f.service) {
      for (const m of s.method) {
        for (const u of m.options?.$unknown ?? []) {
          if (u.no !== HTTP_EXTENSION) continue;
          // The unknown field's data is what follows its tag: the length, then the HttpRule.
          for (const route of ruleRoutes(new BinaryReader(u.data).bytes())) routes.set(route, `${f.package}.${s.name}.${m.name}`);
        }
      }
    }
  }
  return routes;
}

// FileDescriptorProto field numbers, as used in SourceCodeInfo paths.
const PACKAGE = 2;
const DEPENDENCY = 3;
const SERVICE = 6;

/** `[startLine, startCol, endLine, endCol]` (zero-based) of the element at `path`. */
function span(file: FileDescriptorProto, path: number[]): [number, number, number, number] | undefined {
  const loc = file.sourceCodeInfo?.location.find((l) => l.path.length === path.length && l.path.every((p, i) => p === path[i]));
  if (!loc) return undefined;
  const s = loc.span;
  return s.length === 3 ? [s[0]!, s[1]!, s[0]!, s[2]!] : [s[0]!, s[1]!, s[2]!, s[3]!];
}

/**
 * Adds `rpc` (indented lines, without a trailing newline) as the last method of the service, `messages` at the end
 * of the file, and the `imports` the file does not have yet after its last import (or its package line).
 */
export function insertRpc(text: string, at: ServiceLocation, rpc: string, messages: string, imports: string[]): string {
  const lines = text.split("\n");
  const serviceSpan = span(at.file, [SERVICE, at.index]);
  if (!serviceSpan) throw new GeneratorError(`buf reported no position for service ${at.service.name}`);
  const [, , endLine, endCol] = serviceSpan;
  const closing = lines[endLine] ?? "";
  // Columns count a tab as advancing to the next multiple of 8; fall back to the line's last brace then.
  const brace = closing[endCol - 1] === "}" ? endCol - 1 : closing.lastIndexOf("}");
  if (brace < 0) throw new GeneratorError(`cannot find the closing brace of service ${at.service.name}`);
  const before = closing.slice(0, brace);
  const separator = at.service.method.length > 0 ? "\n" : "";
  if (before.trim() === "") {
    lines.splice(endLine, 0, ...`${separator}${rpc}`.split("\n"));
  } else {
    // `service X {}` or a last RPC on the closing line: break the line before the brace.
    lines[endLine] = `${before.trimEnd()}\n${separator}${rpc}\n${closing.slice(brace)}`;
  }

  const missing = imports.filter((i) => !at.file.dependency.includes(i));
  if (missing.length > 0) {
    const deps = at.file.dependency.length;
    const after = span(at.file, deps > 0 ? [DEPENDENCY, deps - 1] : [PACKAGE]);
    if (!after) throw new GeneratorError(`buf reported no position for the imports of ${at.file.name}`);
    // The insertion above is below the imports, so their line numbers still hold.
    lines.splice(after[2] + 1, 0, ...(deps > 0 ? [] : [""]), ...missing.map((i) => `import "${i}";`));
  }

  const out = lines.join("\n").replace(/\n*$/, "\n");
  return `${out}\n${messages.replace(/\n*$/, "\n")}`;
}
