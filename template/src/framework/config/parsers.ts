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

/** A comma list of HTTP header names, lower-cased. */
export const headerNameList: Parser<string[]> = (raw) => {
  const names = list(raw);
  for (const name of names) {
    if (!/^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/.test(name) || name === "*") {
      throw new ConfigValueError(
        `expected a comma list of HTTP header names such as x-request-cost,trailer-x-request-cost ("${name}" is not one)`,
      );
    }
  }
  return names.map((n) => n.toLowerCase());
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

/** 127.0.0.0/8, ::1 and localhost: the only hosts plain http may reach for keys (nothing on the network can alter the answer). */
export function isLoopbackHost(hostname: string): boolean {
  return hostname === "localhost" || hostname === "[::1]" || /^127(?:\.\d{1,3}){3}$/.test(hostname);
}

/**
 * A URL the service fetches signing keys from: https, or http to a loopback address only (a test or a
 * sidecar), since whoever can alter a key set's answer can sign any token. No credentials or fragment in it.
 */
export const keySetUrl: Parser<string> = (raw) => {
  let url: URL | undefined;
  try {
    url = new URL(raw);
  } catch {}
  if (url?.username !== "" || url.password !== "" || url.hash !== "")
    throw new ConfigValueError("expected an https:// URL (without credentials or #fragment)");
  if (url.protocol === "https:" || (url.protocol === "http:" && isLoopbackHost(url.hostname))) return raw;
  throw new ConfigValueError("expected an https:// URL (plain http only to a loopback address such as 127.0.0.1)");
};

/** A non-empty comma list of values from `allowed` (case kept as JOSE spells it). */
export function subsetOf<const T extends string>(...allowed: T[]): Parser<T[]> {
  return (raw) => {
    const values = list(raw);
    const bad = values.filter((v) => !allowed.includes(v as T));
    if (values.length === 0 || bad.length > 0)
      throw new ConfigValueError(
        `expected a comma list of ${allowed.join(", ")}${bad.length > 0 ? ` (${bad.join(", ")} is not one)` : ""}`,
      );
    return [...new Set(values)] as T[];
  };
}
