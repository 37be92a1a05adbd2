// Prints a FileDescriptorProto back to .proto source.
//
// We need this because no npm package ships buf/validate/validate.proto, while @bufbuild/protovalidate
// embeds its full descriptor. The output must compile (with buf/protoc) to the *identical* descriptor, so
// everything below follows the descriptor literally: declaration order is kept, type names stay fully
// qualified (no scope-resolution surprises), and options go through the library's text-format writer.
// Covers proto2 and proto3; editions and proto2 groups are rejected rather than printed wrongly.
import { createRegistry, isFieldSet, type DescFile, type DescMessage, type MessageShape, type Registry } from "@bufbuild/protobuf";
import { protoCamelCase } from "@bufbuild/protobuf/reflect";
import { toText } from "@bufbuild/protobuf/txtpb";
import {
  type DescriptorProto,
  type EnumDescriptorProto,
  EnumOptionsSchema,
  EnumValueOptionsSchema,
  ExtensionRangeOptionsSchema,
  type FieldDescriptorProto,
  FieldDescriptorProto_Label as Label,
  FieldDescriptorProto_Type as Type,
  FieldDescriptorProtoSchema,
  FieldOptionsSchema,
  FileOptionsSchema,
  MessageOptionsSchema,
  MethodOptionsSchema,
  OneofOptionsSchema,
  type ServiceDescriptorProto,
  ServiceOptionsSchema,
} from "@bufbuild/protobuf/wkt";

/** Exclusive end of a message's field-number space; an (extension/reserved) range ending here prints as `max`. */
const MESSAGE_MAX = 536870912;
/** Inclusive end of an enum's number space. */
const ENUM_MAX = 2147483647;

/** Returns the .proto source for `file`, starting with the given comment lines (without `//`). */
export function printProto(file: DescFile, header: string[] = []): string {
  const p = new Printer(file);
  return [...header.map((l) => `// ${l}`.trimEnd()), ...(header.length ? [""] : []), ...p.file()].join("\n") + "\n";
}

class Printer {
  private readonly proto2: boolean;
  // Extension values inside options are kept as unknown fields; the registry lets the text-format writer
  // decode them. It needs the extensions of this file and of every file it imports, transitively.
  private readonly registry: Registry;

  constructor(private readonly desc: DescFile) {
    const syntax = desc.proto.syntax || "proto2"; // "" means proto2 in descriptors
    if (syntax !== "proto2" && syntax !== "proto3") throw new Error(`${desc.proto.name}: syntax "${syntax}" is not supported`);
    this.proto2 = syntax === "proto2";
    const files = new Set<DescFile>();
    const visit = (f: DescFile): void => {
      if (files.has(f)) return;
      files.add(f);
      f.dependencies.forEach(visit);
    };
    visit(desc);
    this.registry = createRegistry(...files);
  }

  file(): string[] {
    const f = this.desc.proto;
    const out = [`syntax = "${this.proto2 ? "proto2" : "proto3"}";`, ""];
    if (f.package) out.push(`package ${f.package};`, "");
    f.dependency.forEach((dep, i) => {
      const kind = f.publicDependency.includes(i) ? "public " : f.weakDependency.includes(i) ? "weak " : "";
      out.push(`import ${kind}"${dep}";`);
    });
    if (f.dependency.length) out.push("");
    const opts = this.options(FileOptionsSchema, f.options).map((o) => `option ${o};`);
    if (opts.length) out.push(...opts, "");
    const blocks = [
      ...this.extensions(f.extension, ""),
      ...f.service.map((s) => this.service(s)),
      ...f.messageType.map((m) => this.message(m, "")),
      ...f.enumType.map((e) => this.enum(e, "")),
    ];
    return [...out, blocks.join("\n\n")];
  }

  /** `extend X { … }` blocks. Consecutive extensions of the same extendee share a block, which keeps their order. */
  private extensions(exts: FieldDescriptorProto[], indent: string): string[] {
    const runs: FieldDescriptorProto[][] = [];
    for (const e of exts) {
      const last = runs.at(-1);
      if (last?.[0]?.extendee === e.extendee) last.push(e);
      else runs.push([e]);
    }
    return runs.map((run) =>
      [`${indent}extend ${run[0]?.extendee} {`, ...run.map((e) => this.field(e, indent + "  ", this.label(e))), `${indent}}`].join("\n"),
    );
  }

  private service(s: ServiceDescriptorProto): string {
    const lines = [`service ${s.name} {`, ...this.options(ServiceOptionsSchema, s.options).map((o) => indentLines(`  option ${o};`, "  "))];
    for (const m of s.method) {
      const sig = `  rpc ${m.name}(${m.clientStreaming ? "stream " : ""}${m.inputType}) returns (${m.serverStreaming ? "stream " : ""}${m.outputType})`;
      const opts = this.options(MethodOptionsSchema, m.options);
      lines.push(opts.length ? [`${sig} {`, ...opts.map((o) => indentLines(`    option ${o};`, "    ")), "  }"].join("\n") : `${sig};`);
    }
    return [...lines, "}"].join("\n");
  }

  private message(m: DescriptorProto, indent: string): string {
    const inner = indent + "  ";
    const mapEntries = new Set(m.nestedType.filter((n) => n.options?.mapEntry).map((n) => n.name));
    const lines = [`${indent}message ${m.name} {`];
    lines.push(...this.options(MessageOptionsSchema, m.options).map((o) => indentLines(`${inner}option ${o};`, inner)));

    // Fields in declaration order; a real oneof is printed as a block where its first member appears.
    // proto3 `optional` fields sit in a synthetic oneof that must not be printed.
    const inOneof = (f: FieldDescriptorProto) => isFieldSet(f, FieldDescriptorProtoSchema.field.oneofIndex) && !f.proto3Optional;
    const printedOneofs = new Set<number>();
    for (const f of m.field) {
      if (!inOneof(f)) {
        lines.push(this.field(f, inner, this.label(f), m));
        continue;
      }
      if (printedOneofs.has(f.oneofIndex)) continue;
      printedOneofs.add(f.oneofIndex);
      const decl = m.oneofDecl[f.oneofIndex];
      if (!decl) throw new Error(`${m.name}.${f.name}: oneof index ${f.oneofIndex} out of range`);
      lines.push(`${inner}oneof ${decl.name} {`);
      lines.push(...this.options(OneofOptionsSchema, decl.options).map((o) => indentLines(`${inner}  option ${o};`, inner + "  ")));
      lines.push(...m.field.filter((o) => inOneof(o) && o.oneofIndex === f.oneofIndex).map((o) => this.field(o, inner + "  ", "", m)));
      lines.push(`${inner}}`);
    }

    lines.push(...m.nestedType.filter((n) => !mapEntries.has(n.name)).map((n) => this.message(n, inner)));
    lines.push(...m.enumType.map((e) => this.enum(e, inner)));
    lines.push(...this.extensions(m.extension, inner));
    for (const r of m.extensionRange) {
      const opts = this.options(ExtensionRangeOptionsSchema, r.options);
      lines.push(indentLines(`${inner}extensions ${range(r.start, r.end - 1, MESSAGE_MAX - 1)}${brackets(opts)};`, inner));
    }
    // Message reserved ranges are end-exclusive in the descriptor.
    if (m.reservedRange.length) lines.push(`${inner}reserved ${m.reservedRange.map((r) => range(r.start, r.end - 1, MESSAGE_MAX - 1)).join(", ")};`);
    if (m.reservedName.length) lines.push(`${inner}reserved ${m.reservedName.map((n) => JSON.stringify(n)).join(", ")};`);
    return [...lines, `${indent}}`].join("\n");
  }

  private enum(e: EnumDescriptorProto, indent: string): string {
    const inner = indent + "  ";
    const lines = [`${indent}enum ${e.name} {`];
    lines.push(...this.options(EnumOptionsSchema, e.options).map((o) => indentLines(`${inner}option ${o};`, inner)));
    for (const v of e.value) {
      lines.push(indentLines(`${inner}${v.name} = ${v.number}${brackets(this.options(EnumValueOptionsSchema, v.options))};`, inner));
    }
    // Enum reserved ranges are end-inclusive in the descriptor.
    if (e.reservedRange.length) lines.push(`${inner}reserved ${e.reservedRange.map((r) => range(r.start, r.end, ENUM_MAX)).join(", ")};`);
    if (e.reservedName.length) lines.push(`${inner}reserved ${e.reservedName.map((n) => JSON.stringify(n)).join(", ")};`);
    return [...lines, `${indent}}`].join("\n");
  }

  private label(f: FieldDescriptorProto): string {
    if (f.label === Label.REPEATED) return "repeated ";
    if (f.label === Label.REQUIRED) return "required ";
    return this.proto2 || f.proto3Optional ? "optional " : ""; // proto3 singular fields carry no label
  }

  /** One field line; `parent` is the enclosing message, used to recognise map fields. */
  private field(f: FieldDescriptorProto, indent: string, label: string, parent?: DescriptorProto): string {
    let type: string;
    const entry = parent?.nestedType.find((n) => n.options?.mapEntry && f.typeName.endsWith(`.${parent.name}.${n.name}`));
    if (entry && f.label === Label.REPEATED) {
      const [k, v] = entry.field;
      if (!k || !v) throw new Error(`${parent?.name}.${f.name}: malformed map entry`);
      type = `map<${typeName(k)}, ${typeName(v)}>`;
      label = "";
    } else {
      type = typeName(f);
    }

    const opts: string[] = [];
    if (isFieldSet(f, FieldDescriptorProtoSchema.field.defaultValue)) opts.push(`default = ${defaultValue(f)}`);
    // Compilers always fill json_name; only a custom one was written in the source.
    if (isFieldSet(f, FieldDescriptorProtoSchema.field.jsonName) && f.jsonName !== protoCamelCase(f.name)) {
      opts.push(`json_name = ${JSON.stringify(f.jsonName)}`);
    }
    opts.push(...this.options(FieldOptionsSchema, f.options));
    return indentLines(`${indent}${label}${type} ${f.name} = ${f.number}${brackets(opts)};`, indent);
  }

  /**
   * An options message as proto option assignments (`name = value`, `(.ext.name) = { … }`), known fields first
   * and then extensions. The text-format writer of @bufbuild/protobuf does the value formatting and string
   * escaping; we only turn each top-level `name: value` entry into `name = value`. Aggregates span several
   * lines, all indented except the first, so an unindented line always starts a new entry.
   */
  private options<D extends DescMessage>(schema: D, opts: MessageShape<D> | undefined): string[] {
    if (!opts) return [];
    const entries: string[] = [];
    for (const line of toText(schema, opts, { registry: this.registry }).split("\n")) {
      if (line === "") continue;
      if (line.startsWith(" ") || line === "}") entries[entries.length - 1] += `\n${line}`;
      else entries.push(line.replace(/^\[([^\]]+)\]: /, "(.$1) = ").replace(/^(\w+): /, "$1 = "));
    }
    return entries;
  }
}

function typeName(f: FieldDescriptorProto): string {
  switch (f.type) {
    case Type.MESSAGE:
    case Type.ENUM:
      return f.typeName; // fully qualified with a leading dot, so it resolves the same from any scope
    case Type.GROUP:
      throw new Error(`${f.name}: proto2 groups are not supported`);
    default:
      return Type[f.type].toLowerCase(); // e.g. Type.SFIXED64 -> "sfixed64"
  }
}

/** The proto2 `default` option: the descriptor stores it as text (bytes already C-escaped). */
function defaultValue(f: FieldDescriptorProto): string {
  if (f.type === Type.STRING) return JSON.stringify(f.defaultValue); // JSON escapes are valid proto escapes
  if (f.type === Type.BYTES) return `"${f.defaultValue}"`;
  return f.defaultValue; // numbers, inf/nan, true/false, enum value names
}

/** `5`, `5 to 9` or `5 to max`, given an inclusive end. */
function range(start: number, end: number, max: number): string {
  return start === end ? `${start}` : `${start} to ${end === max ? "max" : end}`;
}

function brackets(opts: string[]): string {
  return opts.length ? ` [${opts.join(", ")}]` : "";
}

/** Indents the continuation lines of a multi-line statement (text-format aggregates start at column 0). */
function indentLines(text: string, indent: string): string {
  return text.replaceAll("\n", `\n${indent}`);
}
