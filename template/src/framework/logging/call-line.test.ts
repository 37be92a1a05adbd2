import assert from "node:assert/strict";
import { describe, test } from "node:test";
import type { Logger } from "pino";
import { writeCallLine } from "./call-line.js";
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
});
