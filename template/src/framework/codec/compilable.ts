import type { DescField, DescMessage } from "@bufbuild/protobuf";

/** google.protobuf.Edition.EDITION_PROTO3: the only edition compiled (see `compilable`). */
const EDITION_PROTO3 = 999;

/** Thrown by the compiled codecs on anything they do not take on themselves: the caller then asks protobuf-es. */
export const FALLBACK: unique symbol = Symbol("binary codec fallback");

/**
 * Whether a message type (and every type reachable from it) is compiled. Only proto3 files are, because
 * proto3 rules out what protobuf-es treats specially elsewhere: proto2 groups and delimited encoding,
 * closed enums (unknown values go to unknown fields), required fields, field defaults on the prototype
 * and strings without UTF-8 validation. Fields holding google.protobuf.Struct are plain JSON objects in
 * protobuf-es, so a type with one is left to it too. Extensions need nothing: protobuf-es keeps them in
 * `$unknown` on decode, and so do the compiled decoders.
 */
export function compilable(desc: DescMessage, seen = new Map<DescMessage, boolean>()): boolean {
  const known = seen.get(desc);
  if (known !== undefined) return known;
  seen.set(desc, true); // a recursive type is compilable if the rest of it is
  const ok = desc.file.edition === EDITION_PROTO3 && desc.fields.every((f) => fieldCompilable(f, seen));
  seen.set(desc, ok);
  return ok;
}

function fieldCompilable(field: DescField, seen: Map<DescMessage, boolean>): boolean {
  if (field.fieldKind === "enum" && !field.enum.open) return false;
  if (field.fieldKind === "list" && field.listKind === "enum" && !field.enum.open) return false;
  if (field.fieldKind === "map" && field.mapKind === "enum" && !field.enum.open) return false;
  const message = field.message;
  if (message === undefined) return true;
  if (message.typeName === "google.protobuf.Struct" && field.parent.typeName !== "google.protobuf.Value") return false;
  if ("delimitedEncoding" in field && field.delimitedEncoding) return false;
  return compilable(message, seen);
}
