import { type DescEnum, type DescField, type DescMessage, isFieldSet, type Message, ScalarType } from "@bufbuild/protobuf";
import {
  type BoolRules,
  BoolRulesSchema,
  type BytesRules,
  BytesRulesSchema,
  type EnumRules,
  EnumRulesSchema,
  type FieldRules,
  KnownRegex,
  type StringRules,
  StringRulesSchema,
} from "@bufbuild/protovalidate/gen/buf/validate/validate_pb.js";
import { type Accept, all, type Compiled, type Obj, onlySet, schemaOf } from "./validate-accept-rules.js";

// The fast-accept checks of scalar and enum values (a field's, a list item's, a map key's or value's), each
// mirroring protovalidate's native rule of the same name; see validate-accept.ts.

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

export function compileScalar(scalar: ScalarType, longAsString: boolean, rules: FieldRules | undefined): Compiled {
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

export function compileEnum(desc: DescEnum, rules: FieldRules | undefined): Compiled {
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
// oxlint-disable-next-line no-control-regex -- the control characters a header value may not hold
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
export function lengthCheck(
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

export function bytesEqual(a: Uint8Array, b: Uint8Array): boolean {
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
