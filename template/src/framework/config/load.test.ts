import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { describe, test } from "node:test";
import { ConfigError, configLine, configSummary, gatewayMode, loadConfig } from "./load.js";

/** The problems loadConfig reports for `env`; fails the test if it accepts it. */
function problems(env: Record<string, string>): string[] {
  try {
    loadConfig(env);
  } catch (err) {
    assert.ok(err instanceof ConfigError, `expected ConfigError, got ${String(err)}`);
    return err.problems;
  }
  assert.fail(`expected ${JSON.stringify(env)} to be rejected`);
}

/** Exactly one problem, on one line, naming the variable first. */
function oneProblem(env: Record<string, string>, variable: string): string {
  const found = problems(env);
  assert.equal(found.length, 1, `expected one problem, got ${JSON.stringify(found)}`);
  const line = found[0]!;
  assert.ok(line.startsWith(`${variable}: `), `"${line}" should start with the variable name`);
  assert.doesNotMatch(line, /\n/);
  return line;
}

describe("loadConfig", () => {
  test("an empty environment gives the documented defaults", () => {
    const c = loadConfig({});
    assert.equal(c.GRPC_PORT, 9090);
    assert.equal(c.HTTP_PORT, 9091);
    assert.equal(c.LISTEN_HOST, "0.0.0.0");
    assert.equal(c.ADMIN_PORT, undefined);
    assert.equal(c.LOG_LEVEL, "info");
    assert.equal(c.LOG_FORMAT, "json");
    assert.equal(c.TRACE_HEADER_NAME, "x-trace-id");
    assert.equal(c.DEBUG_LOG_HEADER_NAME, "x-debug-log-level");
    assert.equal(c.GRPC_SERVER_DEFAULT_TIMEOUT_IN_SECONDS, 60);
    assert.equal(c.RATE_LIMIT_PER_SECOND, 0);
    assert.equal(c.RATE_LIMIT_BURST, undefined);
    assert.equal(c.GRPC_MAX_RECV_MSG_SIZE, 4194304);
    assert.equal(c.GRPC_MAX_SEND_MSG_SIZE, 4194304);
    assert.equal(c.DISABLE_PROTO_VALIDATE, false);
    assert.equal(c.DISABLE_UNIX_GATEWAY, true);
    assert.equal(c.GATEWAY_MODE, undefined);
    assert.equal(c.SSE_HEARTBEAT_SECONDS, 15);
    assert.equal(c.JWT_CLOCK_SKEW_SECONDS, 30);
    assert.equal(c.JWT_SECRET, undefined);
    assert.deepEqual(c.API_KEYS, []);
    assert.deepEqual(c.HTTP_HEADER_PREFIXES, []);
    assert.equal(c.ENABLE_PROMETHEUS_GRPC_HISTOGRAM, true);
    assert.deepEqual(c.PROMETHEUS_GRPC_HISTOGRAM_BUCKETS, [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10]);
    assert.equal(c.GRPC_GRACEFUL_DURATION_IN_SECONDS, 7);
    assert.equal(c.SHUTDOWN_DURATION_IN_SECONDS, 15);
    assert.equal(c.GIT_COMMIT, "");
  });

  test("an empty value counts as unset", () => {
    assert.equal(loadConfig({ GRPC_PORT: "" }).GRPC_PORT, 9090);
  });

  test("values are typed: numbers, booleans, lists and lower-cased choices", () => {
    const c = loadConfig({
      GRPC_PORT: "7000",
      DISABLE_PROTO_VALIDATE: "TRUE",
      LOG_LEVEL: "DEBUG",
      HTTP_HEADER_PREFIXES: " x-a, ,x-b ",
      PROMETHEUS_GRPC_HISTOGRAM_BUCKETS: "0.1, 1,10",
      TRACE_HEADER_NAME: "X-Request-Id",
    });
    assert.equal(c.GRPC_PORT, 7000);
    assert.equal(c.DISABLE_PROTO_VALIDATE, true);
    assert.equal(c.LOG_LEVEL, "debug");
    assert.deepEqual(c.HTTP_HEADER_PREFIXES, ["x-a", "x-b"]);
    assert.deepEqual(c.PROMETHEUS_GRPC_HISTOGRAM_BUCKETS, [0.1, 1, 10]);
    assert.equal(c.TRACE_HEADER_NAME, "x-request-id");
  });

  test("the result is frozen", () => {
    assert.ok(Object.isFrozen(loadConfig({})));
  });

  describe("each parser rejects with one line naming the variable and the accepted form", () => {
    test("a non-numeric port", () => {
      const line = oneProblem({ GRPC_PORT: "abc" }, "GRPC_PORT");
      assert.match(line, /expected an integer from 0 to 65535/);
      assert.match(line, /"abc"/);
    });

    test("a port out of range", () => {
      assert.match(oneProblem({ HTTP_PORT: "70000" }, "HTTP_PORT"), /expected an integer from 0 to 65535/);
    });

    test("a fractional port", () => {
      assert.match(oneProblem({ ADMIN_PORT: "80.5" }, "ADMIN_PORT"), /expected an integer/);
    });

    test("a bool given as yes", () => {
      assert.match(oneProblem({ DISABLE_PROTO_VALIDATE: "yes" }, "DISABLE_PROTO_VALIDATE"), /expected true, false, 1 or 0/);
    });

    test("an unknown LOG_LEVEL", () => {
      assert.match(oneProblem({ LOG_LEVEL: "verbose" }, "LOG_LEVEL"), /expected one of debug, info, warn, error/);
    });

    test("an unknown GATEWAY_MODE", () => {
      assert.match(oneProblem({ GATEWAY_MODE: "socket" }, "GATEWAY_MODE"), /expected one of tcp, unix, in-process/);
    });

    test("a bucket list with a non-number", () => {
      const line = oneProblem({ PROMETHEUS_GRPC_HISTOGRAM_BUCKETS: "0.1,fast,1" }, "PROMETHEUS_GRPC_HISTOGRAM_BUCKETS");
      assert.match(line, /expected a comma-separated list of numbers ≥ 0/);
    });

    test("a bucket list with a negative bound", () => {
      assert.match(oneProblem({ PROMETHEUS_GRPC_HISTOGRAM_BUCKETS: "-1,1" }, "PROMETHEUS_GRPC_HISTOGRAM_BUCKETS"), /comma-separated list/);
    });

    test("a bucket list with no numbers at all", () => {
      assert.match(oneProblem({ PROMETHEUS_GRPC_HISTOGRAM_BUCKETS: " , " }, "PROMETHEUS_GRPC_HISTOGRAM_BUCKETS"), /comma-separated list/);
    });

    test("a negative duration", () => {
      assert.match(
        oneProblem({ GRPC_SERVER_DEFAULT_TIMEOUT_IN_SECONDS: "-1" }, "GRPC_SERVER_DEFAULT_TIMEOUT_IN_SECONDS"),
        /expected a number from 0/,
      );
    });

    test("a header name with a space", () => {
      assert.match(oneProblem({ TRACE_HEADER_NAME: "x trace" }, "TRACE_HEADER_NAME"), /expected an HTTP header name/);
    });

    test("a RATE_LIMIT_BURST of 0", () => {
      assert.match(oneProblem({ RATE_LIMIT_BURST: "0" }, "RATE_LIMIT_BURST"), /expected an integer from 1/);
    });
  });

  test("several bad variables are all reported at once, one line each", () => {
    const found = problems({ GRPC_PORT: "abc", HTTP_PORT: "x", LOG_LEVEL: "loud", DISABLE_DEBUG: "nope" });
    assert.equal(found.length, 4);
    for (const name of ["GRPC_PORT", "HTTP_PORT", "LOG_LEVEL", "DISABLE_DEBUG"]) {
      assert.equal(found.filter((l) => l.startsWith(`${name}: `)).length, 1, `${name} should be reported once in ${JSON.stringify(found)}`);
    }
    for (const line of found) assert.doesNotMatch(line, /\n/);
  });

  test("the ConfigError message lists every problem", () => {
    assert.throws(
      () => loadConfig({ GRPC_PORT: "abc", HTTP_PORT: "x" }),
      (err: unknown) => err instanceof ConfigError && /GRPC_PORT/.test(err.message) && /HTTP_PORT/.test(err.message),
    );
  });

  describe("cross-checks", () => {
    test("GRPC_GRACEFUL_DURATION_IN_SECONDS equal to SHUTDOWN_DURATION_IN_SECONDS is rejected", () => {
      const line = oneProblem({ GRPC_GRACEFUL_DURATION_IN_SECONDS: "15" }, "GRPC_GRACEFUL_DURATION_IN_SECONDS");
      assert.match(line, /must be less than SHUTDOWN_DURATION_IN_SECONDS/);
    });

    test("GRPC_GRACEFUL_DURATION_IN_SECONDS above SHUTDOWN_DURATION_IN_SECONDS is rejected", () => {
      const line = oneProblem(
        { GRPC_GRACEFUL_DURATION_IN_SECONDS: "10", SHUTDOWN_DURATION_IN_SECONDS: "5" },
        "GRPC_GRACEFUL_DURATION_IN_SECONDS",
      );
      assert.match(line, /10 ≥ 5/);
    });

    test("a graceful wait below the shutdown budget is accepted", () => {
      const c = loadConfig({ GRPC_GRACEFUL_DURATION_IN_SECONDS: "1", SHUTDOWN_DURATION_IN_SECONDS: "5" });
      assert.equal(c.GRPC_GRACEFUL_DURATION_IN_SECONDS, 1);
      assert.equal(c.SHUTDOWN_DURATION_IN_SECONDS, 5);
    });

    test("only a TLS certificate names the missing key", () => {
      assert.match(
        oneProblem({ GRPC_TLS_CERT_FILE: "/tls/cert.pem" }, "GRPC_TLS_KEY_FILE"),
        /must be set together with GRPC_TLS_CERT_FILE/,
      );
    });

    test("only a TLS key names the missing certificate", () => {
      assert.match(oneProblem({ GRPC_TLS_KEY_FILE: "/tls/key.pem" }, "GRPC_TLS_CERT_FILE"), /must be set together with GRPC_TLS_KEY_FILE/);
    });

    test("both TLS files are accepted", () => {
      const c = loadConfig({ GRPC_TLS_CERT_FILE: "/c.pem", GRPC_TLS_KEY_FILE: "/k.pem" });
      assert.equal(c.GRPC_TLS_CERT_FILE, "/c.pem");
      assert.equal(c.GRPC_TLS_KEY_FILE, "/k.pem");
    });

    test("HTTP_PORT equal to GRPC_PORT is a clash naming both", () => {
      const line = oneProblem({ GRPC_PORT: "8000", HTTP_PORT: "8000" }, "HTTP_PORT");
      assert.match(line, /port 8000 is already used by GRPC_PORT/);
    });

    test("ADMIN_PORT equal to a default port is a clash", () => {
      assert.match(oneProblem({ ADMIN_PORT: "9091" }, "ADMIN_PORT"), /port 9091 is already used by HTTP_PORT/);
    });

    test("port 0 on several listeners is no clash", () => {
      const c = loadConfig({ GRPC_PORT: "0", HTTP_PORT: "0", ADMIN_PORT: "0" });
      assert.equal(c.GRPC_PORT, 0);
      assert.equal(c.HTTP_PORT, 0);
    });
  });

  describe("secrets", () => {
    const secrets = {
      JWT_SECRET: "jwt-s3cr3t-value",
      API_KEYS: "key-one-s3cr3t,key-two-s3cr3t",
      SENTRY_DSN: "https://dsn-s3cr3t@sentry.example/1",
    };

    test("never appear in the problems reported for other variables", () => {
      assert.throws(
        () => loadConfig({ ...secrets, GRPC_PORT: "abc", GRPC_GRACEFUL_DURATION_IN_SECONDS: "1" }),
        (err: unknown) => {
          assert.ok(err instanceof ConfigError);
          assert.doesNotMatch(err.message, /s3cr3t/);
          assert.doesNotMatch(err.problems.join("\n"), /s3cr3t/);
          return true;
        },
      );
    });

    test("are shown as [redacted] in the config summary", () => {
      const summary = configSummary(loadConfig(secrets));
      assert.equal(summary.JWT_SECRET, "[redacted]");
      assert.equal(summary.API_KEYS, "[redacted]");
      assert.equal(summary.SENTRY_DSN, "[redacted]");
      assert.doesNotMatch(JSON.stringify(summary), /s3cr3t/);
    });

    test("unset secrets stay visibly unset in the summary", () => {
      const summary = configSummary(loadConfig({}));
      assert.equal(summary.JWT_SECRET, undefined);
      assert.deepEqual(summary.API_KEYS, []);
    });

    test("the summary still shows ordinary values", () => {
      const summary = configSummary(loadConfig({ ...secrets, GRPC_PORT: "7001", JWT_ISSUER: "issuer" }));
      assert.equal(summary.GRPC_PORT, 7001);
      assert.equal(summary.JWT_ISSUER, "issuer");
      assert.equal(summary.LOG_LEVEL, "info");
    });
  });

  describe("gatewayMode", () => {
    test("defaults to tcp", () => {
      assert.equal(gatewayMode(loadConfig({})), "tcp");
    });

    test("DISABLE_UNIX_GATEWAY=false selects unix when GATEWAY_MODE is unset", () => {
      assert.equal(gatewayMode(loadConfig({ DISABLE_UNIX_GATEWAY: "false" })), "unix");
    });

    test("GATEWAY_MODE wins over DISABLE_UNIX_GATEWAY", () => {
      assert.equal(gatewayMode(loadConfig({ GATEWAY_MODE: "tcp", DISABLE_UNIX_GATEWAY: "false" })), "tcp");
      assert.equal(gatewayMode(loadConfig({ GATEWAY_MODE: "in-process", DISABLE_UNIX_GATEWAY: "false" })), "in-process");
      assert.equal(gatewayMode(loadConfig({ GATEWAY_MODE: "unix", DISABLE_UNIX_GATEWAY: "true" })), "unix");
    });

    test("GATEWAY_MODE is case-insensitive", () => {
      assert.equal(gatewayMode(loadConfig({ GATEWAY_MODE: "In-Process" })), "in-process");
    });
  });
});

test("configLine: one NAME=value line, secrets redacted, odd values quoted, unset ones left out", () => {
  const line = configLine(
    loadConfig({
      JWT_SECRET: "s3cr3t-s3cr3t-s3cr3t-s3cr3t-s3cr3t",
      APP_NAME: "two words",
      HTTP_HEADER_PREFIXES: "x-api-key,x-tenant",
    }),
  );
  assert.doesNotMatch(line, /s3cr3t|\n/);
  assert.match(line, /(^| )JWT_SECRET=\[redacted\]( |$)/);
  assert.match(line, /(^| )APP_NAME="two words"( |$)/);
  assert.match(line, /(^| )HTTP_HEADER_PREFIXES=x-api-key,x-tenant( |$)/);
  assert.doesNotMatch(line, /(^| )(ADMIN_PORT|GIT_COMMIT)=/, "unset");
});

test("loadConfigOrExit: a bad setting exits 1 with every problem on its own tagged line; a good one goes on", () => {
  const script = `import { loadConfigOrExit } from ${JSON.stringify(import.meta.resolve("./load.ts"))};
    const c = loadConfigOrExit("check"); console.log("port", c.GRPC_PORT);`;
  const start = (env: Record<string, string>) =>
    spawnSync(process.execPath, ["--import", "tsx", "--input-type=module", "-e", script], {
      env: { PATH: process.env.PATH, ...env },
      encoding: "utf8",
    });
  const bad = start({ GRPC_PORT: "nine", HTTP_PORT: "ten" });
  assert.equal(bad.status, 1);
  assert.equal(bad.stdout, "");
  assert.deepEqual(bad.stderr.trimEnd().split("\n"), [
    'check: GRPC_PORT: expected an integer from 0 to 65535 (got "nine")',
    'check: HTTP_PORT: expected an integer from 0 to 65535 (got "ten")',
  ]);
  const good = start({ GRPC_PORT: "9191" });
  assert.equal(good.status, 0, good.stderr);
  assert.equal(good.stdout, "port 9191\n");
});

describe("AUTH_REQUIRED (fail closed)", () => {
  test("true without a credential source refuses the configuration, naming every variable that would do", () => {
    assert.throws(
      () => loadConfig({ AUTH_REQUIRED: "true" }),
      (err: Error) => /AUTH_REQUIRED: .*set JWT_SECRET, JWT_JWKS_URL, JWT_OIDC_ISSUER or API_KEYS .*AUTH_REQUIRED=false/.test(err.message),
    );
    for (const source of [
      { JWT_SECRET: "s".repeat(32) },
      { JWT_JWKS_URL: "https://idp.test/jwks" },
      { JWT_OIDC_ISSUER: "https://idp.test" },
      { API_KEYS: "k" },
    ])
      assert.equal(loadConfig({ AUTH_REQUIRED: "true", ...source }).AUTH_REQUIRED, true, Object.keys(source)[0]);
    assert.equal(loadConfig({}).AUTH_REQUIRED, false, "off unless asked for");
  });

  test("src/main.ts's defaults apply where the environment leaves a variable unset or empty, and yield to it", () => {
    assert.throws(() => loadConfig({}, { AUTH_REQUIRED: "true" }), /AUTH_REQUIRED/);
    assert.throws(() => loadConfig({ AUTH_REQUIRED: "" }, { AUTH_REQUIRED: "true" }), /AUTH_REQUIRED/);
    assert.equal(loadConfig({ AUTH_REQUIRED: "false" }, { AUTH_REQUIRED: "true" }).AUTH_REQUIRED, false);
  });
});
