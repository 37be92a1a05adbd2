import assert from "node:assert/strict";
import { describe, test } from "node:test";
import type { Logger } from "pino";
import { jsonNumber, jsonString, writeCallLine, writeResponseTimeLine } from "./call-line.js";
import { configureLogging, requestLogger, rootLogger } from "./logger.js";

const lines: string[] = [];
const capture = (level: "info" | "warn") => {
  lines.length = 0;
  configureLogging({ level, format: "json", destination: { write: (line: string) => void lines.push(line) } });
};

/** A call's logging surface as the CallContext offers it. */
const callLog = (fields: Record<string, unknown>, debug = false) => ({
  fields,
  debug,
  get logger(): Logger {
    return requestLogger(fields, debug);
  },
});

/** What pino itself writes for the same call line, with the timestamp made comparable. */
function viaPino(fields: Record<string, unknown>, extra: Record<string, string | number>): string {
  requestLogger(fields, false).info(extra, "response time");
  return lines.pop() as string;
}

const stamp = (line: string) => line.replace(/"@timestamp":"[^"]+"/, '"@timestamp":"T"');

describe("the call line", () => {
  test("is the record pino writes for the same fields, byte for byte", () => {
    capture("info");
    const fields = {
      grpcMethod: "/pkg.v1.Svc/Echo",
      httpPath: "/api/v1/echo",
      trace: 'quote " and \\ and é',
      n: 3,
      big: 1e21,
      notANumber: Number.NaN,
      ok: true,
      gone: undefined,
    };
    const extra = { grpcCode: "OK", took_ms: 0.125 };
    const expected = viaPino(fields, extra);
    writeCallLine(callLog(fields), extra, "response time");
    assert.equal(lines.length, 1);
    assert.equal(stamp(lines[0] as string), stamp(expected));
    assert.deepEqual(JSON.parse(lines[0] as string), {
      ...JSON.parse(expected),
      "@timestamp": JSON.parse(lines[0] as string)["@timestamp"],
    });
  });

  test("quotes strings as JSON.stringify does, escapes and surrogates included", () => {
    const values = [
      "",
      "/pkg.v1.Svc/Echo",
      "0b1c2d3e-aaaa-4bbb-8ccc-0123456789ab",
      'quote " backslash \\ slash /',
      "tab\t newline\n nul\u0000 unit\u001f del\u007f",
      "line sep \u2028 para sep \u2029 bom \ufeff",
      "é ü 漢字",
      "pair 😀 ok",
      "lone high \ud83d end",
      "lone low \ude00 end",
      "reversed \ude00\ud83d",
      "\ud83d",
    ];
    for (const value of values) assert.equal(jsonString(value), JSON.stringify(value), JSON.stringify(value));
    for (let code = 0; code < 0x10000; code++) {
      const value = `a${String.fromCharCode(code)}b`;
      if (jsonString(value) !== JSON.stringify(value)) assert.fail(`U+${code.toString(16)}: ${jsonString(value)}`);
    }
  });

  test("writes surrogate pairs and control characters in fields as pino does, and escapes a lone surrogate", () => {
    capture("info");
    const fields = { grpcMethod: "/pkg.v1.Svc/Echo", httpPath: "/api/😀/x", trace: "a\u0001b\u2028c" };
    const extra = { grpcCode: "Internal", took_ms: 12.5 };
    const expected = viaPino(fields, extra);
    writeCallLine(callLog(fields), extra, "response time");
    assert.equal(stamp(lines.pop() as string), stamp(expected));
    // pino writes a short string's lone surrogate as it is (not valid UTF-8 once encoded); the line escapes it,
    // as JSON.stringify does, so the value survives.
    writeCallLine(callLog({ httpPath: "/api/\ud83d/x" }), extra, "response time");
    const line = lines.pop() as string;
    assert.match(line, /"httpPath":"\/api\/\\ud83d\/x"/);
    assert.equal(JSON.parse(line).httpPath, "/api/\ud83d/x");
  });

  test("goes through pino when a field is not a plain value or clashes with the line's own keys", () => {
    capture("info");
    const nested = { grpcMethod: "/pkg.v1.Svc/Echo", user: { id: 7n, tags: ["a"] } };
    writeCallLine(callLog(nested), { grpcCode: "OK", took_ms: 1 }, "response time");
    // JSON.stringify would throw on the bigint; pino writes it as a number.
    assert.deepEqual(JSON.parse(lines.pop() as string).user, { id: 7, tags: ["a"] });
    writeCallLine(callLog({ grpcCode: "set by the handler" }), { grpcCode: "Internal", took_ms: 1 }, "response time");
    const line = lines.pop() as string;
    assert.equal(line.match(/"grpcCode"/g)?.length, 1);
    assert.equal(JSON.parse(line).grpcCode, "Internal");
  });

  test("follows the level: nothing below LOG_LEVEL, unless the call logs at debug", () => {
    capture("warn");
    assert.equal(rootLogger().level, "warn");
    writeCallLine(callLog({ grpcMethod: "/pkg.v1.Svc/Echo" }), { grpcCode: "OK", took_ms: 1 }, "response time");
    assert.equal(lines.length, 0);
    writeCallLine(callLog({ grpcMethod: "/pkg.v1.Svc/Echo" }, true), { grpcCode: "OK", took_ms: 1 }, "response time");
    assert.equal(lines.length, 1);
    assert.equal(JSON.parse(lines[0] as string).msg, "response time");
  });

  test("the unary response-time line is writeCallLine's line for the same call, byte for byte, however its bag changes", () => {
    capture("info");
    const bags: Record<string, unknown>[] = [
      { grpcMethod: "/pkg.v1.Svc/Echo", trace: "0b1c2d3e-aaaa-4bbb-8ccc-0123456789ab" },
      { grpcMethod: "/pkg.v1.Svc/Echo", trace: "1b1c2d3e-aaaa-4bbb-8ccc-0123456789ab" },
      { grpcMethod: "/pkg.v1.Svc/Other", trace: 'quote " and \\ and é' },
      { grpcMethod: "/pkg.v1.Svc/Echo", httpPath: "/api/\ud83d/x", trace: "a\u0001b\u2028c", sub: "user-1", n: 3, inf: 1 / 0, ok: false },
      { grpcMethod: "/pkg.v1.Svc/Echo", gone: undefined, toString: "a field named like an Object method" },
      { grpcMethod: "/pkg.v1.Svc/Echo", trace: "0b1c2d3e-aaaa-4bbb-8ccc-0123456789ab" },
      { grpcMethod: "/pkg.v1.Svc/Echo", user: { id: 7n } },
      { grpcMethod: "/pkg.v1.Svc/Echo", took_ms: "set by the handler" },
      { msg: "a bag that sets the record's own key" },
    ];
    const codes: [string, number][] = [
      ["OK", 0.125],
      ["OK", 12],
      ["Internal", 1234.5],
      ["DeadlineExceeded", 0],
      ["Unknown", Number.NaN],
    ];
    for (const bag of bags) {
      for (const [code, took] of codes) {
        writeCallLine(callLog(bag), { grpcCode: code, took_ms: took }, "response time");
        const expected = lines.pop() as string;
        writeResponseTimeLine(callLog(bag), code, took);
        assert.equal(lines.length, 1, "one line each");
        assert.equal(stamp(lines.pop() as string), stamp(expected), JSON.stringify({ bag: Object.keys(bag), code, took }));
      }
    }
    capture("warn");
    writeResponseTimeLine(callLog({ grpcMethod: "/pkg.v1.Svc/Echo" }), "OK", 1);
    assert.equal(lines.length, 0, "nothing below LOG_LEVEL");
    writeResponseTimeLine(callLog({ grpcMethod: "/pkg.v1.Svc/Echo" }, true), "OK", 1);
    assert.equal(JSON.parse(lines.pop() as string).msg, "response time", "unless the call logs at debug");
  });

  test("jsonNumber writes what JSON.stringify writes: every thousandth up to 10 s, a spread of them up to 1e12, other numbers", () => {
    const check = (value: number) => {
      if (jsonNumber(value) !== JSON.stringify(value)) assert.fail(`${value}: ${jsonNumber(value)} instead of ${JSON.stringify(value)}`);
    };
    for (let n = 0; n <= 10_000_000; n++) check(n / 1000);
    for (let n = 10_000_000; n < 1e15; n += 9_999_991_237) check(n / 1000);
    const others = [-0, -1.5, 0.0005, 1e-7, 123456789012.345, 1e15, 1e21, 2 ** 53 + 0.5, 0.1 + 0.2, Math.PI, Number.MAX_VALUE];
    for (const value of others) assert.equal(jsonNumber(value), JSON.stringify(value), String(value));
    for (const value of [Number.NaN, Number.POSITIVE_INFINITY, Number.NEGATIVE_INFINITY]) assert.equal(jsonNumber(value), "null");
  });
});
