import { type DescMessage, isFieldSet, type Message } from "@bufbuild/protobuf";
import {
  BoolRulesSchema,
  BytesRulesSchema,
  DoubleRulesSchema,
  EnumRulesSchema,
  FieldRulesSchema,
  Fixed32RulesSchema,
  Fixed64RulesSchema,
  FloatRulesSchema,
  Int32RulesSchema,
  Int64RulesSchema,
  MapRulesSchema,
  OneofRulesSchema,
  RepeatedRulesSchema,
  SFixed32RulesSchema,
  SFixed64RulesSchema,
  SInt32RulesSchema,
  SInt64RulesSchema,
  StringRulesSchema,
  UInt32RulesSchema,
  UInt64RulesSchema,
} from "@bufbuild/protovalidate/gen/buf/validate/validate_pb.js";

// What the fast-accept compiler (validate-accept.ts) and its scalar rules (validate-accept-scalars.ts) share.

/** True: the value certainly passes its rules. False: it may not, ask protovalidate. */
export type Accept = (value: unknown) => boolean;
/** A compiled part: a check, `null` when there is nothing to check, `undefined` when it cannot be compiled. */
export type Compiled = Accept | null | undefined;
export type Obj = Record<string, unknown>;

export function all(checks: Accept[]): Compiled {
  if (checks.length === 0) return null;
  if (checks.length === 1) return checks[0];
  if (checks.length === 2) {
    const [a, b] = checks as [Accept, Accept];
    return (v) => a(v) && b(v);
  }
  return (v) => {
    for (let i = 0; i < checks.length; i++) if (!(checks[i] as Accept)(v)) return false;
    return true;
  };
}

/**
 * Whether a rules message sets only the listed fields (by local name; a oneof's members count as set
 * when selected) and carries no unknown fields (predefined rules arrive as extensions, i.e. unknown
 * fields, and are CEL).
 */
export function onlySet(rules: Message, allowed: readonly string[]): boolean {
  const r = rules as Message & { $unknown?: unknown[] };
  if (r.$unknown !== undefined && r.$unknown.length > 0) return false;
  const desc = schemaOf(rules);
  if (desc === undefined) return false;
  for (const f of desc.fields) {
    if (!allowed.includes(f.localName) && isFieldSet(rules, f)) return false;
  }
  return true;
}

const SCHEMAS = new Map<string, DescMessage>(
  (
    [
      [FieldRulesSchema, OneofRulesSchema, StringRulesSchema, BytesRulesSchema, BoolRulesSchema, EnumRulesSchema],
      [RepeatedRulesSchema, MapRulesSchema, FloatRulesSchema, DoubleRulesSchema, Int32RulesSchema, Int64RulesSchema],
      [UInt32RulesSchema, UInt64RulesSchema, SInt32RulesSchema, SInt64RulesSchema, Fixed32RulesSchema, Fixed64RulesSchema],
      [SFixed32RulesSchema, SFixed64RulesSchema],
    ] as DescMessage[][]
  )
    .flat()
    .map((s) => [s.typeName, s]),
);

/** The schema of one of the buf.validate rules messages this compiler reads. */
export function schemaOf(rules: Message): DescMessage | undefined {
  return SCHEMAS.get(rules.$typeName);
}
