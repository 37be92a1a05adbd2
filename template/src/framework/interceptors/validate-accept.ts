import {
  type DescEnum,
  type DescField,
  type DescMessage,
  getOption,
  hasOption,
  isFieldSet,
  type Message,
  protoInt64,
  ScalarType,
} from "@bufbuild/protobuf";
import { isScalarZeroValue, scalarEquals, scalarZeroValue } from "@bufbuild/protobuf/reflect";
import { FeatureSet_FieldPresence } from "@bufbuild/protobuf/wkt";
import {
  type BoolRules,
  BoolRulesSchema,
  type BytesRules,
  BytesRulesSchema,
  DoubleRulesSchema,
  type EnumRules,
  EnumRulesSchema,
  type FieldRules,
  FieldRulesSchema,
  Fixed32RulesSchema,
  Fixed64RulesSchema,
  FloatRulesSchema,
  field as fieldRules,
  Ignore,
  Int32RulesSchema,
  Int64RulesSchema,
  KnownRegex,
  type MapRules,
  MapRulesSchema,
  message as messageRules,
  OneofRulesSchema,
  oneof as oneofRules,
  type RepeatedRules,
  RepeatedRulesSchema,
  SFixed32RulesSchema,
  SFixed64RulesSchema,
  SInt32RulesSchema,
  SInt64RulesSchema,
  type StringRules,
  StringRulesSchema,
  UInt32RulesSchema,
  UInt64RulesSchema,
} from "@bufbuild/protovalidate/gen/buf/validate/validate_pb.js";

/*
 * "Fast accept, slow reject": at start-up, the buf.validate rules of a request type are compiled into a
 * plain-JS predicate that says "protovalidate would find no violation in this message". When it says so,
 * the interceptor skips protovalidate (its reflect(), Cursor, plan walk and result object per call); when
 * it does not, protovalidate runs exactly as before, so every violation, message, field path and status is
 * still protovalidate's own. The predicate is therefore only ever allowed to say yes when protovalidate
 * would: each rule below mirrors protovalidate-es 1.x's native evaluator for it (src/native/*.ts,
 * planner.ts, condition.ts), and a type with any rule not listed here (CEL expressions, message rules,
 * regex `pattern`, well-known formats, `unique` on messages, predefined rule extensions, Any/Duration/
 * Timestamp rules, …) gets no predicate at all: protovalidate checks every message of it, as before.
 */

/** True: the value certainly passes its rules. False: it may not, ask protovalidate. */
type Accept = (value: unknown) => boolean;
/** A compiled part: a check, `null` when there is nothing to check, `undefined` when it cannot be compiled. */
type Compiled = Accept | null | undefined;
type Memo = Map<DescMessage, { accept?: Accept; failed?: boolean }>;

/**
 * The fast-accept predicate of a message type, or undefined when its rules include one this compiler does
 * not reproduce exactly. The predicate never accepts a message protovalidate would reject.
 */
export function compileFastAccept(desc: DescMessage): ((message: Message) => boolean) | undefined {
  const accept = compileMessage(desc, new Map());
  if (accept === undefined) return undefined;
  const typeName = desc.typeName;
  if (accept === null) return (message) => message.$typeName === typeName;
  return (message) => {
    if (message.$typeName !== typeName) return false;
    try {
      return accept(message);
    } catch {
      return false; // e.g. a message nested too deep for the stack: protovalidate gives its own answer
    }
  };
}

/**
 * Whether protovalidate has anything to check on a message of this type: a buf.validate option on the
 * message, one of its oneofs or fields, or on any message type it holds (a field, list item or map value),
 * however deep. Without one its plan is empty (this service's validator does not enforce proto2's
 * `required`, which would need no option), and every message of the type is valid.
 */
export function hasValidationRules(desc: DescMessage, seen = new Set<DescMessage>()): boolean {
  if (seen.has(desc)) return false; // a recursive type: this one is being looked at already
  seen.add(desc);
  if (hasOption(desc, messageRules) || desc.oneofs.some((o) => hasOption(o, oneofRules))) return true;
  for (const field of desc.fields) {
    if (hasOption(field, fieldRules)) return true;
    const held = heldMessage(field);
    if (held !== undefined && hasValidationRules(held, seen)) return true;
  }
  return false;
}

function heldMessage(field: DescField): DescMessage | undefined {
  switch (field.fieldKind) {
    case "message":
      return field.message;
    case "list":
      return field.listKind === "message" ? field.message : undefined;
    case "map":
      return field.mapKind === "message" ? field.message : undefined;
    default:
      return undefined;
  }
}

function compileMessage(desc: DescMessage, memo: Memo): Compiled {
  if (!hasValidationRules(desc)) return null;
  const known = memo.get(desc);
  if (known !== undefined) {
    if (known.failed) return undefined;
    // A recursive type: its check is being built; the call reaches it once it is.
    return (value) => (known.accept as Accept)(value);
  }
  const slot: { accept?: Accept; failed?: boolean } = {};
  memo.set(desc, slot);
  const accept = compileMessageRules(desc, memo);
  if (accept === undefined) {
    slot.failed = true;
    return undefined;
  }
  slot.accept = accept ?? (() => true);
  return accept;
}

function compileMessageRules(desc: DescMessage, memo: Memo): Compiled {
  if (hasOption(desc, messageRules)) return undefined; // CEL and message-level oneof rules
  const checks: Accept[] = [];
  for (const oneof of desc.oneofs) {
    if (!hasOption(oneof, oneofRules)) continue;
    const rules = getOption(oneof, oneofRules);
    if (!onlySet(rules, ["required"])) return undefined;
    if (!rules.required) continue;
    const local = oneof.localName;
    const cases = oneof.fields.map((f) => f.localName as string | undefined);
    checks.push((m) => cases.includes(((m as Obj)[local] as { case?: string }).case));
  }
  for (const field of desc.fields) {
    const check = compileField(field, memo);
    if (check === undefined) return undefined;
    if (check !== null) checks.push(check);
  }
  return all(checks);
}

function all(checks: Accept[]): Compiled {
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

type Condition = "always" | "set" | "never";

/** One field of a message: `required`, the `ignore` condition, and the rules on its value. */
function compileField(field: DescField, memo: Memo): Compiled {
  const rules = getOption(field, fieldRules);
  if (!onlySet(rules, ["required", "ignore", ...RULE_CASES]) || !knownIgnore(rules.ignore)) return undefined;
  const ignore = rules.ignore;
  const required = rules.required && ignore !== Ignore.ALWAYS;
  let condition: Condition;
  let pass: Compiled;
  switch (field.fieldKind) {
    case "message":
      condition = ignore === Ignore.ALWAYS ? "never" : "set";
      // Rules for a message field exist only for Any, Duration, Timestamp, FieldMask and the wrappers.
      pass = rules.type.case === undefined ? compileMessage(field.message, memo) : undefined;
      break;
    case "list":
      condition = listOrMapCondition(ignore);
      pass = compileList(field, rules, memo);
      break;
    case "map":
      condition = listOrMapCondition(ignore);
      pass = compileMap(field, rules, memo);
      break;
    case "enum":
      condition = scalarCondition(field, ignore);
      pass = compileEnum(field.enum, rules);
      break;
    case "scalar":
      condition = scalarCondition(field, ignore);
      pass = compileScalar(field.scalar, field.longAsString, rules);
      break;
  }
  if (pass === undefined) return undefined;
  const isSet = presence(field);
  if (pass === null || condition === "never") return required ? isSet : null;
  const value = fieldValue(field);
  const check = pass;
  if (condition === "always") {
    return required ? (m) => isSet(m) && check(value(m)) : (m) => check(value(m));
  }
  return (m) => (isSet(m) ? check(value(m)) : !required);
}

/** FieldRules' `type` cases this compiler knows (not any, duration, field_mask, timestamp). */
const RULE_CASES = ["float", "double", "int32", "int64", "uint32", "uint64", "sint32", "sint64", "fixed32", "fixed64"].concat([
  "sfixed32",
  "sfixed64",
  "bool",
  "string",
  "bytes",
  "enum",
  "repeated",
  "map",
]);

function knownIgnore(ignore: Ignore): boolean {
  return ignore === Ignore.UNSPECIFIED || ignore === Ignore.IF_ZERO_VALUE || ignore === Ignore.ALWAYS;
}

function listOrMapCondition(ignore: Ignore): Condition {
  return ignore === Ignore.ALWAYS ? "never" : ignore === Ignore.IF_ZERO_VALUE ? "set" : "always";
}

function scalarCondition(field: DescField, ignore: Ignore): Condition {
  if (ignore === Ignore.ALWAYS) return "never";
  if (field.presence === FeatureSet_FieldPresence.IMPLICIT && ignore === Ignore.UNSPECIFIED) return "always";
  return "set";
}

type Obj = Record<string, unknown>;
const hasOwn = Object.prototype.hasOwnProperty;

/** protobuf-es's isFieldSet for this field, specialised at start-up. */
function presence(field: DescField): Accept {
  const name = field.localName;
  if (field.oneof) {
    const group = field.oneof.localName;
    return (m) => ((m as Obj)[group] as { case?: string }).case === name;
  }
  if (field.presence !== FeatureSet_FieldPresence.IMPLICIT) {
    return (m) => (m as Obj)[name] !== undefined && hasOwn.call(m, name);
  }
  switch (field.fieldKind) {
    case "list":
      return (m) => ((m as Obj)[name] as unknown[]).length > 0;
    case "map":
      return (m) => Object.keys((m as Obj)[name] as Obj).length > 0;
    case "scalar": {
      const scalar = field.scalar;
      if (scalar === ScalarType.STRING) return (m) => (m as Obj)[name] !== "";
      return (m) => !isScalarZeroValue(scalar, (m as Obj)[name]);
    }
    case "enum": {
      const zero = field.enum.values[0]?.number;
      return (m) => (m as Obj)[name] !== zero;
    }
    default:
      return () => false; // not reached: message fields always have explicit presence
  }
}

/** The value protovalidate checks: the field's, or its zero value when a oneof holds another case. */
function fieldValue(field: DescField): (m: unknown) => unknown {
  const name = field.localName;
  const zero =
    field.fieldKind === "scalar"
      ? scalarZeroValue(field.scalar, field.longAsString)
      : field.fieldKind === "enum"
        ? field.enum.values[0]?.number
        : undefined;
  if (field.oneof) {
    const group = field.oneof.localName;
    return (m) => {
      const o = (m as Obj)[group] as { case?: string; value?: unknown };
      return o.case === name ? o.value : zero;
    };
  }
  if (zero === undefined) return (m) => (m as Obj)[name];
  return (m) => (m as Obj)[name] ?? zero;
}

function compileList(field: DescField & { fieldKind: "list" }, rules: FieldRules, memo: Memo): Compiled {
  const kind = rules.type.case;
  if (kind !== undefined && kind !== "repeated") return undefined;
  const repeated: RepeatedRules | undefined = kind === "repeated" ? (rules.type.value as RepeatedRules) : undefined;
  const checks: Accept[] = [];
  if (repeated !== undefined) {
    if (!onlySet(repeated, ["minItems", "maxItems", "unique", "items"])) return undefined;
    const sizes = sizeCheck(repeated, "minItems", "maxItems");
    if (sizes) checks.push((list) => sizes((list as unknown[]).length));
    if (repeated.unique) {
      if (field.listKind === "message") return undefined; // protobuf equality: CEL's job
      const unique =
        field.listKind !== "scalar"
          ? "other"
          : field.scalar === ScalarType.BYTES
            ? "bytes"
            : field.scalar === ScalarType.FLOAT || field.scalar === ScalarType.DOUBLE
              ? "float"
              : "other";
      checks.push((list) => isUnique(list as unknown[], unique));
    }
  }
  const items = repeated?.items;
  if (items !== undefined && !itemRulesOk(items)) return undefined;
  let item: Compiled;
  let skip: ((v: unknown) => boolean) | undefined;
  switch (field.listKind) {
    case "message":
      if (items !== undefined && (!onlySet(items, ["ignore"]) || !knownIgnore(items.ignore))) return undefined;
      item = items?.ignore === Ignore.ALWAYS ? null : compileMessage(field.message, memo);
      break;
    case "enum":
      item = compileEnum(field.enum, items);
      skip = skipZero(ScalarType.INT32, field.enum.values[0]?.number, items);
      break;
    case "scalar":
      item = compileScalar(field.scalar, field.longAsString, items);
      skip = skipZero(field.scalar, scalarZeroValue(field.scalar, field.longAsString), items);
      break;
  }
  if (item === undefined) return undefined;
  if (item !== null && items?.ignore !== Ignore.ALWAYS) {
    const each = item;
    const ignored = skip;
    checks.push((list) => {
      const l = list as unknown[];
      for (let i = 0; i < l.length; i++) {
        const v = l[i];
        if ((ignored === undefined || !ignored(v)) && !each(v)) return false;
      }
      return true;
    });
  }
  return all(checks);
}

function compileMap(field: DescField & { fieldKind: "map" }, rules: FieldRules, memo: Memo): Compiled {
  const kind = rules.type.case;
  if (kind !== undefined && kind !== "map") return undefined;
  const map: MapRules | undefined = kind === "map" ? (rules.type.value as MapRules) : undefined;
  const checks: Accept[] = [];
  if (map !== undefined) {
    if (!onlySet(map, ["minPairs", "maxPairs", "keys", "values"])) return undefined;
    const sizes = sizeCheck(map, "minPairs", "maxPairs");
    if (sizes) checks.push((obj) => sizes(Object.keys(obj as Obj).length));
  }
  let key: Compiled = null;
  let skipKey: ((v: unknown) => boolean) | undefined;
  const keys = map?.keys;
  const keyOf = mapKey(field.mapKey);
  if (keys !== undefined) {
    if (!itemRulesOk(keys)) return undefined;
    if (keys.ignore !== Ignore.ALWAYS && keys.type.case !== undefined) {
      key = compileScalar(field.mapKey, false, keys);
      skipKey = skipZero(field.mapKey, scalarZeroValue(field.mapKey, false), keys);
    }
  }
  const values = map?.values;
  if (values !== undefined && !itemRulesOk(values)) return undefined;
  let value: Compiled;
  let skipValue: ((v: unknown) => boolean) | undefined;
  switch (field.mapKind) {
    case "message":
      if (values !== undefined && (!onlySet(values, ["ignore"]) || !knownIgnore(values.ignore))) return undefined;
      value = values?.ignore === Ignore.ALWAYS ? null : compileMessage(field.message, memo);
      break;
    case "enum":
      value = compileEnum(field.enum, values);
      skipValue = skipZero(ScalarType.INT32, field.enum.values[0]?.number, values);
      break;
    case "scalar":
      // Map values have no jstype; a value of the wrong kind fails the type check of its rules.
      value = compileScalar(field.scalar, false, values);
      skipValue = skipZero(field.scalar, scalarZeroValue(field.scalar, false), values);
      break;
  }
  if (key === undefined || value === undefined) return undefined;
  if (values?.ignore === Ignore.ALWAYS) value = null;
  if (key !== null || value !== null) {
    const k = key;
    const v = value;
    checks.push((obj) => {
      const o = obj as Obj;
      for (const name of Object.keys(o)) {
        if (k !== null) {
          const kv = keyOf(name);
          if ((skipKey === undefined || !skipKey(kv)) && !k(kv)) return false;
        }
        const item = o[name];
        if (v !== null && (skipValue === undefined || !skipValue(item)) && !v(item)) return false;
      }
      return true;
    });
  }
  return all(checks);
}

/**
 * A map key as protovalidate sees it: the object's property name turned back into the key's type the way
 * protobuf-es's reflection does (a name it cannot turn stays a string, which fails the rules' type check).
 */
function mapKey(type: ScalarType): (name: string) => unknown {
  switch (type) {
    case ScalarType.STRING:
      return (name) => name;
    case ScalarType.INT32:
    case ScalarType.FIXED32:
    case ScalarType.UINT32:
    case ScalarType.SFIXED32:
    case ScalarType.SINT32:
      return (name) => {
        // biome-ignore lint/correctness/useParseIntRadix: protobuf-es's reflection parses without one ("0x10" is 16)
        const n = Number.parseInt(name);
        return Number.isFinite(n) ? n : name;
      };
    case ScalarType.BOOL:
      return (name) => (name === "true" ? true : name === "false" ? false : name);
    case ScalarType.UINT64:
    case ScalarType.FIXED64:
      return (name) => parsedOr(name, protoInt64.uParse);
    default:
      return (name) => parsedOr(name, protoInt64.parse);
  }
}

function parsedOr(name: string, parse: (s: string) => unknown): unknown {
  try {
    return parse(name);
  } catch {
    return name;
  }
}

/** `ignore: IGNORE_IF_ZERO_VALUE` on list items and map keys/values: the zero value is not checked. */
function skipZero(scalar: ScalarType, zero: unknown, rules: FieldRules | undefined): ((v: unknown) => boolean) | undefined {
  if (rules?.ignore !== Ignore.IF_ZERO_VALUE) return undefined;
  return (v) => scalarEquals(scalar, zero as never, v as never);
}

/** Rules on a list item or map key/value (no `required`, no CEL). */
function itemRulesOk(rules: FieldRules): boolean {
  return onlySet(rules, ["ignore", ...RULE_CASES]) && knownIgnore(rules.ignore);
}

const RULE_KIND: Partial<Record<ScalarType, string>> = {
  [ScalarType.FLOAT]: "float",
  [ScalarType.DOUBLE]: "double",
  [ScalarType.INT32]: "int32",
  [ScalarType.INT64]: "int64",
  [ScalarType.UINT32]: "uint32",
  [ScalarType.UINT64]: "uint64",
  [ScalarType.SINT32]: "sint32",
  [ScalarType.SINT64]: "sint64",
  [ScalarType.FIXED32]: "fixed32",
  [ScalarType.FIXED64]: "fixed64",
  [ScalarType.SFIXED32]: "sfixed32",
  [ScalarType.SFIXED64]: "sfixed64",
  [ScalarType.BOOL]: "bool",
  [ScalarType.STRING]: "string",
  [ScalarType.BYTES]: "bytes",
};

function compileScalar(scalar: ScalarType, longAsString: boolean, rules: FieldRules | undefined): Compiled {
  if (rules === undefined) return null;
  const kind = rules.type.case;
  if (kind === undefined) return null;
  if (kind !== RULE_KIND[scalar]) return undefined; // protovalidate refuses the type: never accept
  const value = rules.type.value;
  switch (kind) {
    case "string":
      return compileString(value as StringRules);
    case "bytes":
      return compileBytes(value as BytesRules);
    case "bool":
      return compileBool(value as BoolRules);
    default:
      // 64-bit values kept as strings (jstype = JS_STRING) are compared as bigint by protovalidate.
      if (longAsString) return undefined;
      return compileNumber(value as NumberRules, kind === "float" || kind === "double");
  }
}

function compileEnum(desc: DescEnum, rules: FieldRules | undefined): Compiled {
  if (rules === undefined) return null;
  const kind = rules.type.case;
  if (kind === undefined) return null;
  if (kind !== "enum") return undefined;
  const r = rules.type.value as EnumRules;
  if (!onlySet(r, ["const", "definedOnly", "in", "notIn"])) return undefined;
  const checks: Accept[] = [];
  if (r.definedOnly) {
    const defined = new Set(desc.values.map((v) => v.number));
    checks.push((v) => defined.has(v as number));
  }
  pushConstInNotIn(checks, r, isFieldSet(r, EnumRulesSchema.field.const));
  return all(checks);
}

function compileBool(r: BoolRules): Compiled {
  if (!onlySet(r, ["const"])) return undefined;
  if (!isFieldSet(r, BoolRulesSchema.field.const)) return null;
  const want = r.const;
  return (v) => v === want;
}

type NumberRules = {
  $typeName: string;
  $unknown?: unknown[];
  const?: number | bigint;
  lessThan: { case: "lt" | "lte" | undefined; value?: number | bigint };
  greaterThan: { case: "gt" | "gte" | undefined; value?: number | bigint };
  in: (number | bigint)[];
  notIn: (number | bigint)[];
  finite?: boolean;
};

/** int32 … sfixed64, float and double: const, lt/lte/gt/gte (also the exclusive form), in, not_in, finite. */
function compileNumber(r: NumberRules, float: boolean): Compiled {
  if (!onlySet(r as never, ["const", "lt", "lte", "gt", "gte", "in", "notIn", "finite"])) return undefined;
  const checks: Accept[] = [];
  const type = float || !r.$typeName.includes("64") ? "number" : "bigint";
  checks.push((v) => typeof v === type);
  pushConstInNotIn(checks, r, isFieldSet(r as never, (schemaOf(r as never) as DescMessage).field.const as DescField));
  const lo = r.greaterThan.case === undefined ? undefined : { gt: r.greaterThan.case === "gt", val: r.greaterThan.value as number };
  const hi = r.lessThan.case === undefined ? undefined : { lt: r.lessThan.case === "lt", val: r.lessThan.value as number };
  // protovalidate leaves a NaN bound to CEL.
  if ((lo && Number.isNaN(lo.val)) || (hi && Number.isNaN(hi.val))) return undefined;
  const below = lo && (lo.gt ? (v: number) => v <= lo.val : (v: number) => v < lo.val);
  const above = hi && (hi.lt ? (v: number) => v >= hi.val : (v: number) => v > hi.val);
  if (below && above && lo && hi) {
    if (hi.val >= lo.val) checks.push((v) => !Number.isNaN(v) && !above(v as number) && !below(v as number));
    else checks.push((v) => !Number.isNaN(v) && !(above(v as number) && below(v as number))); // exclusive range: outside [hi, lo]
  } else if (below) {
    checks.push((v) => !Number.isNaN(v) && !below(v as number));
  } else if (above) {
    checks.push((v) => !Number.isNaN(v) && !above(v as number));
  }
  // NaN fails every range; integers are never NaN.
  if (r.finite) checks.push((v) => Number.isFinite(v));
  return all(checks);
}

function pushConstInNotIn(checks: Accept[], r: { const?: unknown; in: unknown[]; notIn: unknown[] }, hasConst: boolean): void {
  if (hasConst) {
    const want = r.const;
    checks.push((v) => v === want);
  }
  const allowed = r.in;
  // === as protovalidate compares: NaN is in no list (includes() would find it).
  if (allowed.length > 0) checks.push((v) => !Number.isNaN(v) && allowed.includes(v));
  const denied = r.notIn;
  if (denied.length > 0) checks.push((v) => Number.isNaN(v) || !denied.includes(v));
}

function compileString(r: StringRules): Compiled {
  const format = stringFormat(r);
  if (format === undefined) return undefined;
  const names = ["const", "len", "minLen", "maxLen", "lenBytes", "minBytes", "maxBytes"];
  if (!onlySet(r, [...names, "prefix", "suffix", "contains", "notContains", "in", "notIn", ...WELL_KNOWN_STRING])) {
    return undefined;
  }
  const F = StringRulesSchema.field;
  const checks: Accept[] = [(v) => typeof v === "string"];
  if (format !== null) checks.push(format);
  pushConstInNotIn(checks, r, isFieldSet(r, F.const));
  const chars = lengthCheck(r, F, "len", "minLen", "maxLen");
  if (chars) {
    // UTF-16 units bound code points: ceil(units / 2) <= code points <= units; count only when that is not enough.
    const { min, max, exact } = chars;
    checks.push((v) => {
      const s = v as string;
      const units = s.length;
      if (exact === undefined && (units + 1) >> 1 >= min && units <= max) return true;
      const n = codePoints(s);
      return n >= min && n <= max && (exact === undefined || n === exact);
    });
  }
  const bytes = lengthCheck(r, F, "lenBytes", "minBytes", "maxBytes");
  if (bytes) {
    const { min, max, exact } = bytes;
    checks.push((v) => {
      const s = v as string;
      const units = s.length;
      // UTF-8 bytes: units <= bytes <= 3 * units.
      if (exact === undefined && units >= min && units * 3 <= max) return true;
      const n = utf8Length(s);
      return n >= min && n <= max && (exact === undefined || n === exact);
    });
  }
  if (isFieldSet(r, F.prefix)) {
    const p = r.prefix;
    checks.push((v) => (v as string).startsWith(p));
  }
  if (isFieldSet(r, F.suffix)) {
    const p = r.suffix;
    checks.push((v) => (v as string).endsWith(p));
  }
  if (isFieldSet(r, F.contains)) {
    const p = r.contains;
    checks.push((v) => (v as string).includes(p));
  }
  if (isFieldSet(r, F.notContains)) {
    const p = r.notContains;
    checks.push((v) => !(v as string).includes(p));
  }
  return all(checks);
}

/**
 * The well-known string formats protovalidate itself checks with a fixed JavaScript RegExp (the same pattern
 * strings as its native evaluator, so the same answers): a check, `null` for none (`uuid: false`, an
 * unknown header kind), `undefined` for a format left to protovalidate (email, hostname, ip, uri, …, which
 * it checks with its own parsers) or a loose header regex (`strict: false`).
 */
function stringFormat(r: StringRules): Accept | null | undefined {
  const well = r.wellKnown;
  if (well.case === undefined) return isFieldSet(r, StringRulesSchema.field.strict) ? undefined : null;
  if (well.case === "wellKnownRegex") {
    if (isFieldSet(r, StringRulesSchema.field.strict)) return undefined;
    const test =
      well.value === KnownRegex.HTTP_HEADER_NAME ? HEADER_NAME : well.value === KnownRegex.HTTP_HEADER_VALUE ? HEADER_VALUE : undefined;
    return test === undefined ? null : (v) => test.test(v as string);
  }
  if (well.value === false) return null;
  const pattern = FIXED_FORMATS[well.case];
  return pattern === undefined ? undefined : (v) => pattern.test(v as string);
}

const FIXED_FORMATS: Partial<Record<string, RegExp>> = {
  uuid: /^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$/,
  tuuid: /^[0-9a-fA-F]{32}$/,
  ulid: /^[0-7][0-9A-HJKMNP-TV-Za-hjkmnp-tv-z]{25}$/,
  protobufFqn: /^[A-Za-z_][A-Za-z_0-9]*(\.[A-Za-z_][A-Za-z_0-9]*)*$/,
  protobufDotFqn: /^\.[A-Za-z_][A-Za-z_0-9]*(\.[A-Za-z_][A-Za-z_0-9]*)*$/,
};
// Strict header patterns (the default): `+-.` is a range, as in protovalidate's pattern.
const HEADER_NAME = /^:?[0-9a-zA-Z!#$%&'*+-.^_|~`]+$/;
// biome-ignore lint/suspicious/noControlCharactersInRegex: the control characters a header value may not hold
const HEADER_VALUE = /^[^\x00-\x08\x0A-\x1F\x7F]*$/;

const WELL_KNOWN_STRING = ["email", "hostname", "ip", "ipv4", "ipv6", "uri", "uriRef", "address", "uuid", "tuuid"].concat(
  ["ipWithPrefixlen", "ipv4WithPrefixlen", "ipv6WithPrefixlen", "ipPrefix", "ipv4Prefix", "ipv6Prefix"],
  ["hostAndPort", "ulid", "protobufFqn", "protobufDotFqn", "wellKnownRegex"],
);

function compileBytes(r: BytesRules): Compiled {
  const well = r.wellKnown;
  if (well.case !== undefined && well.value !== false) return undefined;
  const names = ["const", "len", "minLen", "maxLen", "prefix", "suffix", "contains", "in", "notIn"];
  if (!onlySet(r, [...names, "ip", "ipv4", "ipv6", "uuid"])) return undefined;
  const F = BytesRulesSchema.field;
  const checks: Accept[] = [(v) => v instanceof Uint8Array];
  if (isFieldSet(r, F.const)) {
    const want = r.const;
    checks.push((v) => bytesEqual(v as Uint8Array, want));
  }
  const size = lengthCheck(r, F, "len", "minLen", "maxLen");
  if (size) {
    const { min, max, exact } = size;
    checks.push((v) => {
      const n = (v as Uint8Array).length;
      return n >= min && n <= max && (exact === undefined || n === exact);
    });
  }
  if (isFieldSet(r, F.prefix)) {
    const p = r.prefix;
    checks.push((v) => startsWith(v as Uint8Array, p, 0));
  }
  if (isFieldSet(r, F.suffix)) {
    const p = r.suffix;
    checks.push((v) => startsWith(v as Uint8Array, p, (v as Uint8Array).length - p.length));
  }
  if (isFieldSet(r, F.contains)) {
    const p = r.contains;
    checks.push((v) => containsBytes(v as Uint8Array, p));
  }
  if (r.in.length > 0) {
    const allowed = r.in;
    checks.push((v) => allowed.some((b) => bytesEqual(b, v as Uint8Array)));
  }
  if (r.notIn.length > 0) {
    const denied = r.notIn;
    checks.push((v) => !denied.some((b) => bytesEqual(b, v as Uint8Array)));
  }
  return all(checks);
}

/** A size rule's bounds as numbers (a bound beyond 2^53 is beyond any length). */
function lengthCheck(
  r: Message,
  F: Record<string, DescField | undefined>,
  exactName: string,
  minName: string,
  maxName: string,
): { min: number; max: number; exact: number | undefined } | undefined {
  const get = (name: string) => {
    const field = F[name];
    return field !== undefined && isFieldSet(r, field) ? ((r as unknown as Obj)[name] as bigint) : undefined;
  };
  const exact = get(exactName);
  const min = get(minName);
  const max = get(maxName);
  if (exact === undefined && min === undefined && max === undefined) return undefined;
  return {
    min: min === undefined ? 0 : toLength(min),
    max: max === undefined ? Number.POSITIVE_INFINITY : toLength(max),
    exact: exact === undefined ? undefined : exact > BigInt(Number.MAX_SAFE_INTEGER) ? -1 : Number(exact),
  };
}

function sizeCheck(r: Message, minName: string, maxName: string): ((n: number) => boolean) | undefined {
  const size = lengthCheck(r, (schemaOf(r) as DescMessage).field, "", minName, maxName);
  if (!size) return undefined;
  const { min, max } = size;
  return (n) => n >= min && n <= max;
}

function toLength(b: bigint): number {
  return b > BigInt(Number.MAX_SAFE_INTEGER) ? Number.POSITIVE_INFINITY : Number(b);
}

/** Unicode code points, as CEL's size(string) and JavaScript's string iterator count them. */
export function codePoints(s: string): number {
  let n = s.length;
  for (let i = 0; i < s.length - 1; i++) {
    const c = s.charCodeAt(i);
    if (c >= 0xd800 && c < 0xdc00) {
      const d = s.charCodeAt(i + 1);
      if (d >= 0xdc00 && d < 0xe000) {
        n--;
        i++;
      }
    }
  }
  return n;
}

/** Bytes of the UTF-8 encoding, a lone surrogate counted as U+FFFD (3 bytes), as TextEncoder writes it. */
export function utf8Length(s: string): number {
  let n = 0;
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i);
    if (c < 0x80) n += 1;
    else if (c < 0x800) n += 2;
    else if (c >= 0xd800 && c < 0xdc00 && i + 1 < s.length) {
      const d = s.charCodeAt(i + 1);
      if (d >= 0xdc00 && d < 0xe000) {
        n += 4;
        i++;
      } else n += 3;
    } else n += 3;
  }
  return n;
}

function bytesEqual(a: Uint8Array, b: Uint8Array): boolean {
  if (a.length !== b.length) return false;
  for (let i = 0; i < a.length; i++) if (a[i] !== b[i]) return false;
  return true;
}

/** Whether `b` holds `p` at `at` (false when it does not fit). */
function startsWith(b: Uint8Array, p: Uint8Array, at: number): boolean {
  if (at < 0 || at + p.length > b.length) return false;
  for (let i = 0; i < p.length; i++) if (b[at + i] !== p[i]) return false;
  return true;
}

function containsBytes(haystack: Uint8Array, needle: Uint8Array): boolean {
  if (needle.length === 0) return true;
  outer: for (let i = 0; i + needle.length <= haystack.length; i++) {
    for (let j = 0; j < needle.length; j++) if (haystack[i + j] !== needle[j]) continue outer;
    return true;
  }
  return false;
}

/**
 * `repeated.unique` on scalars and enums: no two items are === (NaN is distinct from everything, -0 equals 0);
 * bytes by content. Linear scans for short lists, a Set beyond, as protovalidate does: a long list costs
 * O(n), not O(n²).
 */
function isUnique(list: unknown[], kind: "bytes" | "float" | "other"): boolean {
  const n = list.length;
  if (n <= 16) {
    for (let i = 1; i < n; i++) {
      for (let j = 0; j < i; j++) {
        if (kind === "bytes" ? bytesEqual(list[i] as Uint8Array, list[j] as Uint8Array) : list[i] === list[j]) return false;
      }
    }
    return true;
  }
  const seen = new Set<unknown>();
  let added = 0;
  for (let i = 0; i < n; i++) {
    let v = list[i];
    if (kind === "float" && Number.isNaN(v)) continue; // a Set would find NaN equal to NaN; === does not
    if (kind === "bytes") v = bytesKey(v as Uint8Array);
    seen.add(v);
    if (seen.size !== ++added) return false;
  }
  return true;
}

/** One UTF-16 unit per byte: equal bytes give equal keys. */
function bytesKey(bytes: Uint8Array): string {
  let key = "";
  for (let i = 0; i < bytes.length; i++) key += String.fromCharCode(bytes[i] as number);
  return key;
}

/**
 * Whether a rules message sets only the listed fields (by local name; a oneof's members count as set
 * when selected) and carries no unknown fields (predefined rules arrive as extensions, i.e. unknown
 * fields, and are CEL).
 */
function onlySet(rules: Message, allowed: readonly string[]): boolean {
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
function schemaOf(rules: Message): DescMessage | undefined {
  return SCHEMAS.get(rules.$typeName);
}
