import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { ConfigError, loadConfig } from "./load.js";
import { settings } from "./schema.js";
import { KNOWN_PREFIXES, levenshtein, settingTypos } from "./typos.js";

function problems(env: Record<string, string>): string[] {
  try {
    loadConfig(env);
  } catch (err) {
    assert.ok(err instanceof ConfigError);
    return err.problems;
  }
  return [];
}

describe("every problem at once", () => {
  test("cross-checks still run when another variable failed to parse", () => {
    const lines = problems({
      LOG_LEVEL: "verbose",
      GRPC_GRACEFUL_DURATION_IN_SECONDS: "20",
      GRPC_TLS_CERT_FILE: "/tls/cert.pem",
      GRPC_PORT: "9000",
      HTTP_PORT: "9000",
    });
    assert.equal(lines.length, 4, lines.join("\n"));
    assert.match(lines[0]!, /^LOG_LEVEL: expected one of debug, info, warn, error \(got "verbose"\)$/);
    assert.ok(lines.some((l) => l.startsWith("GRPC_GRACEFUL_DURATION_IN_SECONDS: must be less than SHUTDOWN_DURATION_IN_SECONDS")));
    assert.ok(lines.some((l) => l.startsWith("GRPC_TLS_KEY_FILE: must be set together with GRPC_TLS_CERT_FILE")));
    assert.ok(lines.some((l) => l.startsWith("HTTP_PORT: port 9000 is already used by GRPC_PORT")));
  });

  test("a cross-check is skipped for a value that did not parse (no second line about it)", () => {
    assert.deepEqual(problems({ SHUTDOWN_DURATION_IN_SECONDS: "soon", GRPC_GRACEFUL_DURATION_IN_SECONDS: "20" }), [
      'SHUTDOWN_DURATION_IN_SECONDS: expected a number from 0.01 to 9007199254740991 (got "soon")',
    ]);
    assert.deepEqual(problems({ GRPC_PORT: "x", HTTP_PORT: "9090" }), ['GRPC_PORT: expected an integer from 0 to 65535 (got "x")']);
  });

  test("each kind of value says what it accepts", () => {
    const lines = problems({
      DISABLE_PROMETHEUS: "yes",
      LOG_FORMAT: "xml",
      HTTP_PORT: "70000",
      SSE_HEARTBEAT_SECONDS: "0",
      PROMETHEUS_GRPC_HISTOGRAM_BUCKETS: "0.1,fast",
      TRACE_HEADER_NAME: "x trace",
    });
    assert.deepEqual(lines, [
      'HTTP_PORT: expected an integer from 0 to 65535 (got "70000")',
      'LOG_FORMAT: expected one of json, pretty (got "xml")',
      'TRACE_HEADER_NAME: expected an HTTP header name such as x-trace-id (got "x trace")',
      'SSE_HEARTBEAT_SECONDS: expected a number from 0.01 to 9007199254740991 (got "0")',
      'DISABLE_PROMETHEUS: expected true, false, 1 or 0 (got "yes")',
      'PROMETHEUS_GRPC_HISTOGRAM_BUCKETS: expected a comma-separated list of numbers ≥ 0 (got "0.1,fast")',
    ]);
  });
});

describe("settings that look misspelt", () => {
  test("edit distance", () => {
    assert.equal(levenshtein("GRPC_PORT", "GRPC_PORT"), 0);
    assert.equal(levenshtein("GRPC_PROT", "GRPC_PORT"), 2);
    assert.equal(levenshtein("DISABLE_PROMETEUS", "DISABLE_PROMETHEUS"), 1);
    assert.equal(levenshtein("", "abc"), 3);
    assert.equal(levenshtein("kitten", "sitting"), 3);
  });

  test("a near miss with a known prefix suggests the setting", () => {
    assert.deepEqual(
      settingTypos({
        GRPC_PROT: "9000",
        DISABLE_PROMETEUS: "true",
        LOG_LEVL: "debug",
        API_KEY: "k",
        grpc_port: "1",
        SHUTDOWN_DURATION_IN_SECOND: "3",
      }),
      [
        { variable: "API_KEY", suggestion: "API_KEYS" },
        { variable: "DISABLE_PROMETEUS", suggestion: "DISABLE_PROMETHEUS" },
        { variable: "GRPC_PROT", suggestion: "GRPC_PORT" },
        { variable: "LOG_LEVL", suggestion: "LOG_LEVEL" },
        { variable: "SHUTDOWN_DURATION_IN_SECOND", suggestion: "SHUTDOWN_DURATION_IN_SECONDS" },
        { variable: "grpc_port", suggestion: "GRPC_PORT" },
      ],
    );
  });

  test("settings themselves, far-off names and other prefixes are left alone", () => {
    const env: Record<string, string> = {
      GRPC_PORT: "1",
      DISABLE_PROMETHEUS: "true",
      GRPC_TRACE: "all", // grpc-js's own variables
      GRPC_VERBOSITY: "DEBUG",
      GRPC_DEFAULT_SSL_ROOTS_FILE_PATH: "/etc/ssl/roots.pem",
      HTTP_PROXY: "http://proxy:3128",
      HTTPS_PROXY: "http://proxy:3128",
      NODE_OPTIONS: "--enable-source-maps",
      OTEL_SERVICE_NAME: "svc",
      PORT: "8080",
      APP_NAMES: "x", // one edit from APP_NAME, but APP_ is not a watched prefix
      PATH: "/usr/bin",
    };
    assert.deepEqual(settingTypos(env), []);
  });

  test("every watched prefix starts at least one setting", () => {
    const names = Object.keys(settings);
    for (const prefix of KNOWN_PREFIXES)
      assert.ok(
        names.some((n) => n.startsWith(prefix)),
        prefix,
      );
  });
});
