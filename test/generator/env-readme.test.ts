import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { applyEnvVars, type Choices, publicVars, randomSecret, secretVars, setEnvVar } from "../../generator/env-file.js";
import { replaceChoicesBlock } from "../../generator/readme-choices.js";
import { ensureIgnored } from "../../generator/render.js";

const base: Choices = { auth: "none", unixSocket: false, sse: true, install: true, git: true };

describe(".env variables", () => {
  it("sets nothing for the defaults", () => {
    assert.deepEqual(publicVars(base), []);
    assert.deepEqual(secretVars(base), []);
  });

  it("puts JWT_SECRET for jwt in .env only", () => {
    assert.deepEqual(secretVars({ ...base, auth: "jwt" }, () => "S"), [["JWT_SECRET", "S"]]);
    assert.deepEqual(publicVars({ ...base, auth: "jwt" }), [["AUTH_REQUIRED", "true"]], "fail closed: not a secret");
  });

  it("puts API_KEYS in .env and HTTP_HEADER_PREFIXES in both for api-key", () => {
    assert.deepEqual(secretVars({ ...base, auth: "api-key" }, () => "K"), [["API_KEYS", "K"]]);
    assert.deepEqual(publicVars({ ...base, auth: "api-key" }), [
      ["AUTH_REQUIRED", "true"],
      ["HTTP_HEADER_PREFIXES", "x-api-key"],
    ]);
  });

  it("writes everything for both", () => {
    assert.deepEqual(secretVars({ ...base, auth: "both" }, () => "X").map(([k]) => k), ["JWT_SECRET", "API_KEYS"]);
  });

  it("writes admin port, unix socket and SSE choices", () => {
    assert.deepEqual(publicVars({ ...base, adminPort: 9100, unixSocket: true, sse: false }), [
      ["ADMIN_PORT", "9100"],
      ["DISABLE_UNIX_GATEWAY", "false"],
      ["DISABLE_SSE_MARSHALER", "true"],
    ]);
  });

  it("makes random 32-byte base64url secrets", () => {
    const a = randomSecret();
    assert.match(a, /^[A-Za-z0-9_-]{43}$/);
    assert.equal(Buffer.from(a, "base64url").length, 32);
    assert.notEqual(a, randomSecret());
  });
});

describe("setting a dotenv variable", () => {
  it("replaces a commented line instead of appending a duplicate", () => {
    assert.equal(setEnvVar("# A=1\n# ADMIN_PORT=\n# B=2\n", "ADMIN_PORT", "9100"), "# A=1\nADMIN_PORT=9100\n# B=2\n");
  });

  it("replaces an active line before a commented one", () => {
    assert.equal(setEnvVar("# X=doc\nX=1\n", "X", "2"), "# X=doc\nX=2\n");
  });

  it("appends when absent, adding a missing final newline", () => {
    assert.equal(setEnvVar("A=1", "B", "2"), "A=1\nB=2\n");
    assert.equal(setEnvVar("", "B", "2"), "B=2\n");
  });

  it("does not match a longer key with the same prefix", () => {
    assert.equal(setEnvVar("JWT_SECRET_FILE=/x\n", "JWT_SECRET", "s"), "JWT_SECRET_FILE=/x\nJWT_SECRET=s\n");
  });

  it("keeps $ in values literal", () => {
    assert.equal(applyEnvVars("# K=\n", [["K", "a$&b$1"]]), "K=a$&b$1\n");
  });
});

describe("README choices block", () => {
  const readme = "# demo-svc\n\nIntro.\n\n<!-- create-grpc-svc:choices -->\nplaceholder\n<!-- /create-grpc-svc:choices -->\n\nRest.\n";

  it("replaces the block, markers included, with the choices", () => {
    const out = replaceChoicesBlock(readme, { ...base, auth: "both", adminPort: 9100, unixSocket: true, sse: false });
    assert.doesNotMatch(out, /create-grpc-svc:choices|placeholder/);
    assert.match(out, /^# demo-svc\n\nIntro\.\n\nGenerated with these settings:\n\n- \*\*Auth:\*\*/);
    assert.match(out, /JWT_SECRET/);
    assert.match(out, /API_KEYS/);
    assert.match(out, /9100/);
    assert.match(out, /Unix socket/);
    assert.match(out, /DISABLE_SSE_MARSHALER=true/);
    assert.match(out, /\n\nRest\.\n$/);
  });

  it("states the defaults", () => {
    const out = replaceChoicesBlock(readme, base);
    assert.match(out, /\*\*Auth:\*\* off/);
    assert.match(out, /\*\*Admin port:\*\* none/);
    assert.match(out, /TCP loopback/);
    assert.match(out, /\*\*Server-sent events:\*\* on/);
  });

  it("leaves a README without the block unchanged", () => {
    assert.equal(replaceChoicesBlock("# x\n", base), "# x\n");
  });

  it("drops a lone marker rather than shipping it", () => {
    assert.equal(replaceChoicesBlock("# x\n<!-- create-grpc-svc:choices -->\nmore\n", base), "# x\nmore\n");
  });
});

describe(".gitignore safety", () => {
  it("adds .env and node_modules/ when the template's ignore file lacks them", () => {
    assert.equal(ensureIgnored("dist/", [".env", "node_modules/"]), "dist/\n.env\nnode_modules/\n");
  });
  it("recognises existing entries in their usual spellings", () => {
    const text = "/node_modules\n/.env\n";
    assert.equal(ensureIgnored(text, [".env", "node_modules/"]), text);
  });
});
