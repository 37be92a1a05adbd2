import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { parseCliArgs, parsePort } from "../../generator/args.js";
import { UsageError } from "../../generator/errors.js";

const usageError = (re: RegExp) => (e: unknown) => e instanceof UsageError && re.test(e.message) && !e.message.includes("\n");

describe("flag parsing", () => {
  it("leaves everything unset when no flag is given, so prompts or defaults decide", () => {
    assert.deepEqual(parseCliArgs([]), { yes: false, force: false, help: false, version: false });
  });

  it("reads every flag", () => {
    const a = parseCliArgs([
      "my-dir", "--name", "demo-svc", "--yes", "--auth", "both", "--admin-port", "9100",
      "--unix-socket", "--no-sse", "--no-install", "--no-git", "--force",
    ]);
    assert.deepEqual(a, {
      dir: "my-dir", name: "demo-svc", yes: true, auth: "both", adminPort: 9100,
      unixSocket: true, sse: false, install: false, git: false, force: true, help: false, version: false,
    });
  });

  it("accepts --flag=value forms", () => {
    const a = parseCliArgs(["--name=demo-svc", "--auth=api-key", "--admin-port=9092"]);
    assert.equal(a.name, "demo-svc");
    assert.equal(a.auth, "api-key");
    assert.equal(a.adminPort, 9092);
  });

  it("accepts -y, -h and -v as short forms", () => {
    assert.equal(parseCliArgs(["-y"]).yes, true);
    assert.equal(parseCliArgs(["-h"]).help, true);
    assert.equal(parseCliArgs(["-v"]).version, true);
  });

  it("accepts every auth mode", () => {
    for (const mode of ["none", "jwt", "api-key", "both"]) assert.equal(parseCliArgs(["--auth", mode]).auth, mode);
  });

  it("rejects an unknown flag with a one-line usage error", () => {
    assert.throws(() => parseCliArgs(["--bogus"]), usageError(/^unknown option --bogus/));
    assert.throws(() => parseCliArgs(["-x"]), usageError(/^unknown option -x/));
  });

  it("rejects a bad --auth value", () => {
    assert.throws(() => parseCliArgs(["--auth", "oauth"]), usageError(/invalid --auth "oauth"/));
  });

  it("rejects a flag that needs a value but has none", () => {
    assert.throws(() => parseCliArgs(["--name"]), usageError(/--name needs a value/));
    assert.throws(() => parseCliArgs(["--name", "--yes"]), usageError(/--name needs a value/));
  });

  it("rejects a value given to a boolean flag", () => {
    assert.throws(() => parseCliArgs(["--yes=1"]), usageError(/--yes takes no value/));
  });

  it("rejects more than one directory", () => {
    assert.throws(() => parseCliArgs(["a", "b"]), usageError(/one target directory/));
  });
});

describe("admin port validation", () => {
  it("accepts 1 to 65535 except the service's own ports", () => {
    assert.equal(parsePort("1"), 1);
    assert.equal(parsePort("9092"), 9092);
    assert.equal(parsePort("65535"), 65535);
  });
  for (const bad of ["0", "65536", "-1", "abc", "9092.5", "0x2384", "", " 9092", "1e3"]) {
    it(`rejects ${JSON.stringify(bad)}`, () => {
      assert.throws(() => parseCliArgs([`--admin-port=${bad}`]), usageError(/invalid --admin-port/));
    });
  }
  for (const clash of ["9090", "9091"]) {
    it(`rejects ${clash}, a port the service itself uses`, () => {
      assert.throws(() => parsePort(clash), usageError(/service's gRPC and HTTP ports/));
    });
  }
});
