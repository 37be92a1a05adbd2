/**
 * Parsers for environment values. Each returns the typed value or throws a
 * ConfigValueError whose message says what is accepted, for a one-line report.
 */
export class ConfigValueError extends Error {}

export type Parser<T> = (raw: string) => T;

export const string: Parser<string> = (raw) => raw;

export const boolean: Parser<boolean> = (raw) => {
  switch (raw.toLowerCase()) {
    case "true":
    case "1":
      return true;
    case "false":
    case "0":
      return false;
    default:
      throw new ConfigValueError("expected true, false, 1 or 0");
  }
};

export function integer(min: number, max: number): Parser<number> {
  return (raw) => {
    const n = /^-?\d+$/.test(raw.trim()) ? Number(raw) : Number.NaN;
    if (!Number.isSafeInteger(n) || n < min || n > max) throw new ConfigValueError(`expected an integer from ${min} to ${max}`);
    return n;
  };
}

/** 0 asks the OS for a free port, which tests use. */
export const port = integer(0, 65535);

export function number(min: number, max = Number.MAX_SAFE_INTEGER): Parser<number> {
  return (raw) => {
    const n = raw.trim() === "" ? Number.NaN : Number(raw);
    if (!Number.isFinite(n) || n < min || n > max) throw new ConfigValueError(`expected a number from ${min} to ${max}`);
    return n;
  };
}

export function oneOf<const T extends string>(...choices: T[]): Parser<T> {
  return (raw) => {
    const value = raw.toLowerCase() as T;
    if (!choices.includes(value)) throw new ConfigValueError(`expected one of ${choices.join(", ")}`);
    return value;
  };
}

/** A comma-separated list; blanks are dropped. */
export const list: Parser<string[]> = (raw) =>
  raw
    .split(",")
    .map((s) => s.trim())
    .filter((s) => s !== "");

export function numberList(min: number): Parser<number[]> {
  const item = number(min);
  return (raw) => {
    try {
      const values = list(raw).map(item);
      if (values.length === 0) throw new ConfigValueError("");
      return values;
    } catch {
      throw new ConfigValueError(`expected a comma-separated list of numbers ≥ ${min}`);
    }
  };
}

/** An HTTP header name (RFC 9110 token), lower-cased. */
export const headerName: Parser<string> = (raw) => {
  if (!/^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/.test(raw)) throw new ConfigValueError("expected an HTTP header name such as x-trace-id");
  return raw.toLowerCase();
};

/**
 * A comma list of browser origins (`scheme://host[:port]`, as a browser sends in `Origin`), or `*`.
 * Each is compared byte for byte with the request's Origin, so a path, a trailing slash or a
 * wildcard inside a name would never match: they are refused here instead of silently ignored.
 */
export const originList: Parser<string[]> = (raw) => {
  const origins = list(raw);
  for (const origin of origins) {
    if (origin === "*") continue;
    let url: URL | undefined;
    try {
      url = new URL(origin);
    } catch {}
    if (!url || (url.protocol !== "http:" && url.protocol !== "https:") || url.origin !== origin || url.hostname.includes("*")) {
      throw new ConfigValueError(
        `expected * or a comma list of origins such as https://app.example.com or http://localhost:5173 ("${origin}" is not one)`,
      );
    }
  }
  if (origins.includes("*") && origins.length > 1) throw new ConfigValueError("expected * alone, or a list of origins without *");
  return origins;
};
