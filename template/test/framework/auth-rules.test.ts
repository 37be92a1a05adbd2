// Authorization from the proto (grpcsvc/v1/options.proto) against the real server on every protocol: public methods
// while auth is on, scopes from the token's `scope` or `scp` claim (PERMISSION_DENIED / 403 without them), a method's
// rule replacing its service's default, and the rules in the OpenAPI document.
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { type JWTPayload, SignJWT } from "jose";
import { authRule, missingScopes } from "../../src/framework/auth/rules.js";
import { defineService } from "../../src/framework/index.js";
import { startTestServer, type TestServer } from "../../src/framework/testing/harness.js";
import { RulesService } from "../gen/authrules/v1/rules_pb.js";
import { FixtureService } from "../gen/fixture/v1/fixture_pb.js";
import { fixtureService } from "./fixtures/fixture-service.js";
import { rulesService, rulesTarget } from "./fixtures/rules-services.js";
import { callEveryProtocol, everywhere, FIXTURE } from "./support/every-protocol.js";

const SECRET = "jwt-secret-0123456789abcdef-0123456789abcdef";
const KEY = "api-key-0123456789abcdef";

const rules = rulesService;
const OPEN = rulesTarget("open");
const READ = rulesTarget("read");
const WRITE = rulesTarget("write");

function token(claims: JWTPayload = {}): Promise<string> {
  return new SignJWT({ sub: "alice", ...claims })
    .setProtectedHeader({ alg: "HS256" })
    .setExpirationTime("1h")
    .sign(new TextEncoder().encode(SECRET));
}
const bearer = async (claims: JWTPayload) => ({ authorization: `Bearer ${await token(claims)}` });

describe("rules read from the descriptors", () => {
  test("a method's own rule, else its service's default_auth, else none", () => {
    const m = (name: string) => RulesService.methods.find((x) => x.name === name)!;
    assert.deepEqual(authRule(m("Open")), { public: true, scopes: [] });
    assert.deepEqual(authRule(m("Read")), { public: false, scopes: ["rules:read"] });
    assert.deepEqual(authRule(m("Write")), { public: false, scopes: ["rules:write", "rules:admin"] });
    assert.deepEqual(authRule(FixtureService.methods.find((x) => x.name === "Countdown")!), { public: true, scopes: [] });
    assert.equal(authRule(FixtureService.methods.find((x) => x.name === "Echo")!), undefined);
  });

  test("scopes come from `scope` (space-separated) or `scp` (a list or a string); none without claims", () => {
    assert.deepEqual(missingScopes({ scope: "a b" }, ["a", "b"]), []);
    assert.deepEqual(missingScopes({ scp: ["a", "b"] }, ["a", "b"]), []);
    assert.deepEqual(missingScopes({ scp: "a b" }, ["b"]), []);
    assert.deepEqual(missingScopes({ scope: "a", scp: ["b"] }, ["a", "b"]), []);
    assert.deepEqual(missingScopes({ scope: "ab" }, ["a", "b"]), ["a", "b"]);
    assert.deepEqual(missingScopes({ scope: "a,b", scp: [1, { a: 1 }, "a b"] }, ["a", "b"]), ["a", "b"], "a list entry is one whole scope");
    assert.deepEqual(missingScopes(undefined, ["a"]), ["a"]);
  });
});

describe("rules on every protocol (JWT_SECRET and API_KEYS on)", () => {
  let server: TestServer;
  before(async () => {
    server = await startTestServer([rules, fixtureService], { JWT_SECRET: SECRET, API_KEYS: KEY, HTTP_HEADER_PREFIXES: "x-api-key" });
  });
  after(() => server.close());

  test("public methods answer without credentials, and with any credentials", async () => {
    assert.deepEqual(await callEveryProtocol(server, {}, OPEN), everywhere("ok"));
    assert.deepEqual(await callEveryProtocol(server, { authorization: "Bearer garbage" }, OPEN), everywhere("ok"));
  });

  test("scoped methods: 401 without credentials, 403 without the scopes, OK with all of them", async () => {
    assert.deepEqual(await callEveryProtocol(server, {}, READ), everywhere("unauthenticated"));
    assert.deepEqual(await callEveryProtocol(server, {}, WRITE), everywhere("unauthenticated"));
    assert.deepEqual(await callEveryProtocol(server, await bearer({}), READ), everywhere("permission_denied"), "no scope claim");
    assert.deepEqual(
      await callEveryProtocol(server, { "x-api-key": KEY }, READ),
      everywhere("permission_denied"),
      "an API key has no scopes",
    );
    const reader = await bearer({ scope: "openid rules:read" });
    assert.deepEqual(await callEveryProtocol(server, reader, READ), everywhere("ok"), "rules:read in scope");
    assert.deepEqual(await callEveryProtocol(server, reader, WRITE), everywhere("permission_denied"), "a reader writes");
    const half = await bearer({ scp: ["rules:write"] });
    assert.deepEqual(await callEveryProtocol(server, half, WRITE), everywhere("permission_denied"), "one of two scopes");
    const writer = await bearer({ scp: ["rules:admin", "rules:write"] });
    assert.deepEqual(await callEveryProtocol(server, writer, WRITE), everywhere("ok"), "both scopes in scp");
    assert.deepEqual(
      await callEveryProtocol(server, writer, READ),
      everywhere("permission_denied"),
      "the method's rule replaced the default",
    );
  });

  test("PERMISSION_DENIED names the missing scopes; over HTTP it is 403 with the google.rpc.Status body", async () => {
    const res = await fetch(`${server.httpUrl}/v1/write`, {
      method: "POST",
      headers: { "content-type": "application/json", ...(await bearer({ scope: "rules:write" })) },
      body: "{}",
    });
    assert.equal(res.status, 403);
    assert.deepEqual(await res.json(), { code: 7, message: "permission denied: missing scope rules:admin", details: [] });
  });

  test("the fixture's proto keeps Countdown public (no override in code); Echo still needs credentials", async () => {
    // FIXTURE calls Echo over gRPC, REST, gRPC-Web and Connect, and Countdown over WebSocket and SSE.
    assert.deepEqual(await callEveryProtocol(server, {}, FIXTURE), {
      ...everywhere("unauthenticated"),
      websocket: "ok",
      sse: "ok",
    });
    const remaining: number[] = [];
    for await (const m of server.client(FixtureService).countdown({ from: 2 })) remaining.push(m.remaining);
    assert.deepEqual(remaining, [2, 1], "Countdown over gRPC");
  });

  test("the OpenAPI document: public operations have `security: []`, scoped ones list their scopes", async () => {
    const doc = (await (await fetch(`${server.httpUrl}/swagger/authrules.swagger.json`)).json()) as {
      paths: Record<string, Record<string, { security?: unknown[]; "x-required-scopes"?: string[]; description: string }>>;
    };
    assert.deepEqual(doc.paths["/v1/open"]?.get?.security, []);
    assert.deepEqual(doc.paths["/v1/open-watch"]?.get?.security, []);
    assert.deepEqual(doc.paths["/v1/read"]?.get?.["x-required-scopes"], ["rules:read"]);
    assert.equal(doc.paths["/v1/read"]?.get?.security, undefined, "the document's global security applies");
    const write = doc.paths["/v1/write"]?.post;
    assert.deepEqual(write?.["x-required-scopes"], ["rules:write", "rules:admin"]);
    assert.match(write?.description ?? "", /Requires the token scopes: `rules:write`, `rules:admin`/);
  });
});

describe("rules with auth off", () => {
  test("every method answers (nobody's scopes can be checked), and start-up warns naming the scoped methods", async () => {
    const server = await startTestServer([rules]);
    try {
      for (const t of [OPEN, READ, WRITE]) assert.deepEqual(await callEveryProtocol(server, {}, t), everywhere("ok"));
      const warning = server.logs.find((l) => String(l.msg).startsWith("these methods require token scopes"));
      assert.deepEqual(warning?.methods, [
        "authrules.v1.RulesService/Read",
        "authrules.v1.RulesService/ReadWatch",
        "authrules.v1.RulesService/Write",
        "authrules.v1.RulesService/WriteWatch",
      ]);
    } finally {
      await server.close();
    }
  });

  test("a service's authorize override decides alone: its methods' rules do not apply", async () => {
    const overridden = defineService(RulesService, {
      handlers: rules.handlers,
      authorize: (ctx) => ctx.metadata.get("x-tenant")[0] === "t1",
    });
    const server = await startTestServer([overridden], { JWT_SECRET: SECRET, HTTP_HEADER_PREFIXES: "x-tenant" });
    try {
      assert.deepEqual(await callEveryProtocol(server, { "x-tenant": "t1" }, WRITE), { ...everywhere("ok"), websocket: "unauthenticated" });
      assert.deepEqual(await callEveryProtocol(server, {}, OPEN), everywhere("unauthenticated"));
    } finally {
      await server.close();
    }
  });
});
