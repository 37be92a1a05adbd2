import { type DescField, type DescMessage, getOption, hasOption, type Message, protoInt64, ScalarType } from "@bufbuild/protobuf";
import { isScalarZeroValue, scalarEquals, scalarZeroValue } from "@bufbuild/protobuf/reflect";
import { FeatureSet_FieldPresence } from "@bufbuild/protobuf/wkt";
import {
  type FieldRules,
  field as fieldRules,
  Ignore,
  type MapRules,
  message as messageRules,
  oneof as oneofRules,
  type RepeatedRules,
} from "@bufbuild/protovalidate/gen/buf/validate/validate_pb.js";
import { type Accept, all, type Compiled, type Obj, onlySet, schemaOf } from "./validate-accept-rules.js";
import { bytesEqual, compileEnum, compileScalar, lengthCheck } from "./validate-accept-scalars.js";

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
        // oxlint-disable-next-line radix -- protobuf-es's reflection parses without one ("0x10" is 16)
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

function sizeCheck(r: Message, minName: string, maxName: string): ((n: number) => boolean) | undefined {
  const size = lengthCheck(r, (schemaOf(r) as DescMessage).field, "", minName, maxName);
  if (!size) return undefined;
  const { min, max } = size;
  return (n) => n >= min && n <= max;
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
