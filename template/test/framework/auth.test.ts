// Authentication against the real server, over gRPC and over the HTTP gateway: JWT, API keys,
// both, the routes that skip auth, the per-service override, the rate limiter and what reaches the logs.
import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import { once } from "node:events";
import fs from "node:fs";
import net from "node:net";
import os from "node:os";
import path from "node:path";
import { describe, test } from "node:test";
import { promisify } from "node:util";
import { create, toBinary } from "@bufbuild/protobuf";
import { generateKeyPair, type JWTPayload, SignJWT, UnsecuredJWT } from "jose";
import { Code, claimsOf, defineService, requireClaims } from "../../src/framework/index.js";
import { startTestServer, type TestServer } from "../../src/framework/testing/harness.js";
import { Health } from "../../src/gen/grpc/health/v1/health_pb.js";
import { EchoRequestSchema, FixtureService } from "../gen/fixture/v1/fixture_pb.js";
import { fixtureService } from "./fixtures/fixture-service.js";
import { bufCurl } from "./support/buf-curl.js";

const run = promisify(execFile);

// Distinctive values, so a leak into a log line or a response body is easy to find.
const SECRET = "jwt-secret-SENTINEL-0123456789abcdef-0123456789abcdef";
const KEY_1 = "api-key-one-SENTINEL-0123456789abcdef";
const KEY_2 = "api-key-two-SENTINEL-fedcba9876543210";
const ISSUER = "https://issuer.test";
const AUDIENCE = "svc-test";
const now = () => Math.floor(Date.now() / 1000);

type Headers = Record<string, string>;

interface TokenOptions {
  secret?: string;
  alg?: string;
  /** Claims on top of a valid set (sub, iss, aud, iat, exp in an hour); `undefined` removes one. */
  claims?: JWTPayload;
}

function token({ secret = SECRET, alg = "HS256", claims = {} }: TokenOptions = {}): Promise<string> {
  const payload: JWTPayload = { sub: "alice", iss: ISSUER, aud: AUDIENCE, iat: now(), exp: now() + 3600, ...claims };
  for (const k of Object.keys(payload)) if (payload[k] === undefined) delete payload[k];
  return new SignJWT(payload).setProtectedHeader({ alg, typ: "JWT" }).sign(new TextEncoder().encode(secret));
}

const bearer = (jwt: string): Headers => ({ authorization: `Bearer ${jwt}` });

async function grpcError(promise: Promise<unknown>): Promise<{ code: number; details: string }> {
  try {
    await promise;
  } catch (err) {
    return err as { code: number; details: string };
  }
  assert.fail("expected the call to fail");
}

function httpEcho(server: TestServer, headers: Headers, message = "hi"): Promise<Response> {
  return fetch(`${server.httpUrl}/api/v1/echo`, {
    method: "POST",
    headers: { "content-type": "application/json", ...headers },
    body: JSON.stringify({ message }),
  });
}

/** The one answer to every rejection: UNAUTHENTICATED "unauthenticated"; over HTTP 401 + WWW-Authenticate: Bearer. */
async function assertRejected(server: TestServer, headers: Headers, what: string): Promise<void> {
  const err = await grpcError(server.client(FixtureService).echo({ message: "hi" }, { metadata: headers }));
  assert.equal(err.code, Code.UNAUTHENTICATED, `gRPC, ${what}`);
  assert.equal(err.details, "unauthenticated", `gRPC, ${what}`);
  const res = await httpEcho(server, headers);
  assert.equal(res.status, 401, `HTTP, ${what}`);
  assert.equal(res.headers.get("www-authenticate"), "Bearer", `HTTP, ${what}`);
  assert.deepEqual(await res.json(), { code: Code.UNAUTHENTICATED, message: "unauthenticated", details: [] }, `HTTP, ${what}`);
}

async function assertAccepted(server: TestServer, headers: Headers, what: string): Promise<void> {
  const reply = await server.client(FixtureService).echo({ message: what }, { metadata: headers });
  assert.equal(reply.message, what, `gRPC, ${what}`);
  const res = await httpEcho(server, headers, what);
  assert.equal(res.status, 200, `HTTP, ${what}: ${await res.clone().text()}`);
  assert.equal(((await res.json()) as { message: string }).message, what, `HTTP, ${what}`);
}

async function withServer(env: Record<string, string>, fn: (server: TestServer) => Promise<void>, services = [fixtureService]) {
  const server = await startTestServer(services, env);
  try {
    await fn(server);
  } finally {
    await server.close();
  }
}

const JWT_ENV = { JWT_SECRET: SECRET, JWT_ISSUER: ISSUER, JWT_AUDIENCE: AUDIENCE, JWT_CLOCK_SKEW_SECONDS: "30" };
const KEYS_ENV = { API_KEYS: `${KEY_1}, ${KEY_2}`, HTTP_HEADER_PREFIXES: "x-api-key" };

for (const mode of ["tcp", "in-process"]) {
  describe(`JWT (JWT_SECRET set; gateway ${mode})`, () => {
    test("rejects every token that is not a valid HS256 token of this issuer for this audience", async () => {
      await withServer({ ...JWT_ENV, GATEWAY_MODE: mode }, async (server) => {
        const { privateKey } = await generateKeyPair("RS256");
        const cases: [string, Headers][] = [
          ["missing", {}],
          ["malformed: not a JWT", { authorization: "Bearer not-a-jwt" }],
          ["malformed: three garbage parts", { authorization: "Bearer aaa.bbb.ccc" }],
          ["malformed: no Bearer scheme", { authorization: await token() }],
          ["malformed: Basic scheme", { authorization: "Basic YWxpY2U6cGFzc3dvcmQ=" }],
          ["malformed: Bearer without a token", { authorization: "Bearer " }],
          ["expired beyond the leeway", bearer(await token({ claims: { exp: now() - 60 } }))],
          ["not yet valid beyond the leeway", bearer(await token({ claims: { nbf: now() + 60 } }))],
          ["wrong secret", bearer(await token({ secret: "another-secret-0123456789abcdef-0123456789" }))],
          ["alg none", bearer(new UnsecuredJWT({ sub: "alice", iss: ISSUER, aud: AUDIENCE, exp: now() + 3600 }).encode())],
          ["alg none with a signature", bearer(`${new UnsecuredJWT({ sub: "alice", iss: ISSUER, aud: AUDIENCE }).encode()}c2ln`)],
          ["HS512 with the right secret", bearer(await token({ alg: "HS512" }))],
          ["HS384 with the right secret", bearer(await token({ alg: "HS384" }))],
          [
            "RS256",
            bearer(
              await new SignJWT({ sub: "alice", iss: ISSUER, aud: AUDIENCE })
                .setProtectedHeader({ alg: "RS256" })
                .setExpirationTime("1h")
                .sign(privateKey),
            ),
          ],
          ["wrong issuer", bearer(await token({ claims: { iss: "https://evil.test" } }))],
          ["no issuer", bearer(await token({ claims: { iss: undefined } }))],
          ["wrong audience", bearer(await token({ claims: { aud: "another-service" } }))],
          ["no audience", bearer(await token({ claims: { aud: undefined } }))],
        ];
        for (const [what, headers] of cases) await assertRejected(server, headers, what);
      });
    });

    test("accepts a valid token, also within the clock leeway, and the handler reads its claims", async () => {
      await withServer({ ...JWT_ENV, GATEWAY_MODE: mode }, async (server) => {
        await assertAccepted(server, bearer(await token()), "valid");
        await assertAccepted(server, { authorization: `bearer ${await token()}` }, "scheme in lower case");
        await assertAccepted(server, bearer(await token({ claims: { exp: now() - 10 } })), "expired within the leeway");
        await assertAccepted(server, bearer(await token({ claims: { nbf: now() + 10 } })), "not-yet-valid within the leeway");
        await assertAccepted(server, bearer(await token({ claims: { aud: ["other", AUDIENCE] } })), "audience in a list");
        // The served Echo puts `sub` on the call's log fields, so the response-time line shows the caller.
        const lines = server.logs.filter((l) => l.msg === "response time");
        assert.ok(lines.length >= 10);
        assert.ok(
          lines.every((l) => l.sub === "alice"),
          "every accepted call ran with the token's claims",
        );
      });
    });
  });
}

describe("JWT without JWT_ISSUER and JWT_AUDIENCE", () => {
  test("any iss and aud are accepted; the signature, alg and times are still checked", async () => {
    await withServer({ JWT_SECRET: SECRET }, async (server) => {
      await assertAccepted(server, bearer(await token({ claims: { iss: "anyone", aud: "anything" } })), "any iss and aud");
      await assertAccepted(server, bearer(await token({ claims: { iss: undefined, aud: undefined } })), "no iss and aud");
      await assertRejected(server, bearer(await token({ claims: { exp: now() - 3600 } })), "expired");
      await assertRejected(server, bearer(await token({ alg: "HS512" })), "HS512");
      await assertRejected(server, { "x-api-key": KEY_1 }, "an API key when only JWT is on");
    });
  });
});

describe("tokens without exp and repeated credentials", () => {
  test("a token without exp is UNAUTHENTICATED, and accepted with JWT_REQUIRE_EXP=false", async () => {
    await withServer(JWT_ENV, async (server) => {
      await assertRejected(server, bearer(await token({ claims: { exp: undefined } })), "no exp");
      await assertRejected(server, bearer(await token({ claims: { exp: undefined, iat: undefined } })), "no exp, no iat");
      await assertAccepted(server, bearer(await token()), "with exp");
      assert.ok(server.logs.some((l) => l.level === "warn" && l.tokenError === "ERR_JWT_CLAIM_VALIDATION_FAILED" && l.claim === "exp"));
    });
    await withServer({ ...JWT_ENV, JWT_REQUIRE_EXP: "false" }, async (server) => {
      await assertAccepted(server, bearer(await token({ claims: { exp: undefined } })), "no exp, JWT_REQUIRE_EXP=false");
      await assertRejected(server, bearer(await token({ claims: { exp: now() - 3600 } })), "an exp that has passed still counts");
    });
  });

  /** One HTTP/1.1 request written byte for byte (fetch and node:http merge or refuse repeated headers); its status line and body. */
  async function rawHttp(server: TestServer, headerLines: string[]): Promise<{ status: number; body: string }> {
    const { hostname, port } = new URL(server.httpUrl);
    const socket = net.connect(Number(port), hostname);
    let text = "";
    socket.setEncoding("utf8").on("data", (chunk: string) => (text += chunk));
    const closed = once(socket, "close");
    const body = JSON.stringify({ message: "hi" });
    // Written, not ended: Connection: close has the server close once it answered (a half-close may cut it short).
    socket.write(
      [
        "POST /api/v1/echo HTTP/1.1",
        "Host: test",
        "Content-Type: application/json",
        `Content-Length: ${body.length}`,
        "Connection: close",
        ...headerLines,
        "",
        body,
      ].join("\r\n"),
    );
    await closed;
    assert.match(text, /^HTTP\/1\.1 \d{3} /, `a response: ${JSON.stringify(text.slice(0, 300))}`);
    return { status: Number(text.slice(9, 12)), body: text.slice(text.indexOf("\r\n\r\n") + 4) };
  }

  for (const mode of ["tcp", "in-process"]) {
    test(`two Authorization headers are a 401 over HTTP, in any letter case, even two copies of a valid token (gateway ${mode})`, async () => {
      await withServer({ ...JWT_ENV, ...KEYS_ENV, GATEWAY_MODE: mode }, async (server) => {
        const valid = `Bearer ${await token()}`;
        assert.equal((await rawHttp(server, [`Authorization: ${valid}`])).status, 200, "one valid header");
        const cases: [string, string[]][] = [
          ["valid, then garbage", [`Authorization: ${valid}`, "Authorization: Bearer garbage"]],
          ["garbage, then valid", ["Authorization: Bearer garbage", `Authorization: ${valid}`]],
          ["the same valid token twice", [`Authorization: ${valid}`, `Authorization: ${valid}`]],
          ["differing in case", [`Authorization: ${valid}`, `AUTHORIZATION: ${valid}`]],
          ["valid, then empty", [`Authorization: ${valid}`, "authorization: "]],
          ["twice, even with a valid API key", [`Authorization: ${valid}`, `authorization: ${valid}`, `x-api-key: ${KEY_1}`]],
          ["one API key twice, even with a valid token", [`x-api-key: ${KEY_1}`, `x-api-key: ${KEY_1}`, `Authorization: ${valid}`]],
          ["one API key twice", [`x-api-key: ${KEY_1}`, `X-Api-Key: ${KEY_1}`]],
          ["Authorization and Grpc-Metadata-Authorization", [`Authorization: ${valid}`, `Grpc-Metadata-Authorization: ${valid}`]],
          ["x-api-key and Grpc-Metadata-X-Api-Key", [`x-api-key: ${KEY_1}`, `Grpc-Metadata-X-Api-Key: ${KEY_1}`]],
          ["one header holding two tokens", [`Authorization: ${valid}, ${valid}`]],
        ];
        for (const [what, lines] of cases) {
          const { status, body } = await rawHttp(server, lines);
          assert.equal(status, 401, what);
          assert.deepEqual(JSON.parse(body), { code: Code.UNAUTHENTICATED, message: "unauthenticated", details: [] }, what);
        }
      });
    });
  }

  test("two authorization headers over gRPC (HTTP/2) are UNAUTHENTICATED, even two copies of a valid token", async () => {
    await withServer({ ...JWT_ENV, ...KEYS_ENV }, async (server) => {
      const payload = toBinary(EchoRequestSchema, create(EchoRequestSchema, { message: "hi" }));
      const frame = Buffer.alloc(5 + payload.length);
      frame.writeUInt32BE(payload.length, 1);
      frame.set(payload, 5);
      const dir = fs.mkdtempSync(path.join(os.tmpdir(), "auth-test-"));
      const body = path.join(dir, "echo.bin");
      fs.writeFileSync(body, frame);
      // curl sends repeated headers as they are (grpc-js and node:http2 refuse to); -D - prints headers and trailers.
      const status = async (headers: string[]) => {
        const args = [
          "-sS",
          "--http2-prior-knowledge",
          "-D",
          "-",
          "-o",
          "/dev/null",
          "-H",
          "content-type: application/grpc",
          "-H",
          "te: trailers",
        ];
        for (const h of headers) args.push("-H", h);
        const { stdout } = await run("curl", [
          ...args,
          "--data-binary",
          `@${body}`,
          `http://${server.grpcAddress}/fixture.v1.FixtureService/Echo`,
        ]);
        return Number(/^grpc-status: (\d+)/m.exec(stdout)?.[1]);
      };
      try {
        const valid = `authorization: Bearer ${await token()}`;
        assert.equal(await status([valid]), Code.OK, "one valid header");
        assert.equal(await status([valid, valid]), Code.UNAUTHENTICATED, "the same valid token twice");
        assert.equal(await status([valid, "authorization: Bearer garbage"]), Code.UNAUTHENTICATED, "valid, then garbage");
        assert.equal(await status(["authorization: Bearer garbage", valid]), Code.UNAUTHENTICATED, "garbage, then valid");
        assert.equal(await status([`x-api-key: ${KEY_1}`, `x-api-key: ${KEY_1}`]), Code.UNAUTHENTICATED, "one API key twice");
      } finally {
        fs.rmSync(dir, { recursive: true, force: true });
      }
    });
  });
});

describe("API keys (API_KEYS set)", () => {
  test("accepts each configured key and rejects anything else", async () => {
    await withServer(KEYS_ENV, async (server) => {
      await assertAccepted(server, { "x-api-key": KEY_1 }, "first key");
      await assertAccepted(server, { "x-api-key": KEY_2 }, "second key");
      for (const [what, headers] of [
        ["missing", {}],
        ["wrong key", { "x-api-key": "not-a-key" }],
        ["a prefix of a key", { "x-api-key": KEY_1.slice(0, -1) }],
        ["a key with a suffix", { "x-api-key": `${KEY_1}x` }],
        ["both keys in one value", { "x-api-key": `${KEY_1},${KEY_2}` }],
        ["a key in another case", { "x-api-key": KEY_1.toUpperCase() }],
        ["a key as a bearer token", { authorization: `Bearer ${KEY_1}` }],
        ["a valid JWT when only API keys are on", bearer(await token())],
      ] as [string, Headers][]) {
        await assertRejected(server, headers, what);
      }
    });
  });

  test("over HTTP the x-api-key header reaches the service only when HTTP_HEADER_PREFIXES includes it", async () => {
    await withServer({ API_KEYS: KEY_1 }, async (server) => {
      assert.equal((await server.client(FixtureService).echo({ message: "grpc" }, { metadata: { "x-api-key": KEY_1 } })).message, "grpc");
      const res = await httpEcho(server, { "x-api-key": KEY_1 });
      assert.equal(res.status, 401, "the header stays at the HTTP edge");
      // Grpc-Metadata-* always becomes metadata: an explicit way to send it.
      assert.equal((await httpEcho(server, { "grpc-metadata-x-api-key": KEY_1 })).status, 200);
    });
  });
});

describe("JWT and API keys both set", () => {
  test("either credential is enough; neither valid is rejected", async () => {
    await withServer({ ...JWT_ENV, ...KEYS_ENV }, async (server) => {
      const valid = await token();
      await assertAccepted(server, bearer(valid), "a valid JWT alone");
      await assertAccepted(server, { "x-api-key": KEY_2 }, "a valid key alone");
      await assertAccepted(
        server,
        { ...bearer(await token({ secret: "wrong-0123456789abcdef-0123456789abcdef" })), "x-api-key": KEY_1 },
        "bad JWT, good key",
      );
      await assertAccepted(server, { ...bearer(valid), "x-api-key": "wrong" }, "good JWT, bad key");
      await assertRejected(server, {}, "neither");
      await assertRejected(server, { ...bearer(await token({ alg: "HS512" })), "x-api-key": "wrong" }, "both wrong");
      // Claims come only from a token: a call let in by its API key has none.
      const subs = server.logs.filter((l) => l.msg === "response time").map((l) => l.sub);
      assert.deepEqual(subs, ["alice", "alice", undefined, undefined, undefined, undefined, "alice", "alice"]);
    });
  });
});

describe("routes that skip auth", () => {
  for (const admin of [false, true]) {
    test(`health, reflection, /healthcheck, /readycheck and the operational routes need no credentials${admin ? " (ADMIN_PORT set)" : ""}`, async () => {
      await withServer({ ...JWT_ENV, ...KEYS_ENV, ...(admin ? { ADMIN_PORT: "0" } : {}) }, async (server) => {
        await assertRejected(server, {}, "the service itself still needs them");
        const health = server.client(Health);
        assert.equal((await health.check({})).status, 1, "Health/Check is SERVING");
        for await (const update of health.watch({})) {
          assert.equal(update.status, 1, "Health/Watch streams SERVING");
          break;
        }
        const stdout = await bufCurl("--list-methods", `http://${server.grpcAddress}`);
        assert.match(stdout, /^fixture\.v1\.FixtureService\/Echo$/m, "reflection answers");
        for (const p of ["/healthcheck", "/readycheck"]) assert.equal((await fetch(`${server.httpUrl}${p}`)).status, 200, p);
        // The operational routes are plain HTTP routes outside the chain: whatever they answer, it is never 401.
        for (const p of ["/metrics", "/swagger/", "/debug/pprof/"]) {
          const res = await fetch(`${server.adminUrl ?? server.httpUrl}${p}`);
          assert.notEqual(res.status, 401, p);
          assert.equal(res.headers.get("www-authenticate"), null, p);
        }
      });
    });
  }
});

describe("per-service auth override", () => {
  test("the proto rule (grpcsvc.v1.auth public) keeps Countdown public while Echo and Fail take the global check", async () => {
    await withServer(JWT_ENV, async (server) => {
      const client = server.client(FixtureService);
      const remaining: number[] = [];
      for await (const m of client.countdown({ from: 3 })) remaining.push(m.remaining);
      assert.deepEqual(remaining, [3, 2, 1]);
      const res = await fetch(`${server.httpUrl}/api/v1/countdown/2`);
      assert.equal(res.status, 200);
      assert.equal((await res.text()).trim().split("\n").length, 2);
      await assertRejected(server, {}, "Echo");
      assert.equal((await grpcError(client.fail({ code: 0 }))).code, Code.UNAUTHENTICATED, "Fail");
      assert.equal((await client.fail({ code: 0 }, { metadata: bearer(await token()) })).$typeName, "fixture.v1.FailResponse");
    });
  });

  test("an override decides alone: the global check is not called, and a rejection is UNAUTHENTICATED", async () => {
    let overrideCalls = 0;
    const tenantOnly = defineService(FixtureService, {
      handlers: {
        ...fixtureService.handlers,
        // Needs a caller: INTERNAL "missing claims" when the override let the call in without a token.
        echo: (request, ctx) => ({ message: `${request.message} from ${requireClaims(ctx).sub}` }),
      },
      async authorize(ctx, authenticate) {
        overrideCalls++;
        const tenant = ctx.metadata.get("x-tenant")[0];
        if (tenant === "with-token") return authenticate(ctx);
        if (tenant === "refuse") return false;
        if (tenant !== "t1") throw new Error("unknown tenant");
      },
    });
    await withServer(
      { ...JWT_ENV, HTTP_HEADER_PREFIXES: "x-tenant" },
      async (server) => {
        const client = server.client(FixtureService);
        // Let in without any token: the global JWT check was not called, so the handler finds no claims.
        const err = await grpcError(client.echo({ message: "hi" }, { metadata: { "x-tenant": "t1" } }));
        assert.equal(err.code, Code.INTERNAL);
        assert.equal(err.details, "missing claims");
        const res = await httpEcho(server, { "x-tenant": "t1" });
        assert.equal(res.status, 500);
        assert.equal(((await res.json()) as { message: string }).message, "missing claims");
        // A valid token does not help when the override refuses.
        await assertRejected(server, { ...bearer(await token()), "x-tenant": "nobody" }, "override throws");
        await assertRejected(server, { ...bearer(await token()), "x-tenant": "refuse" }, "override returns false");
        // The override may delegate to the global check, which puts the claims on the context.
        await assertRejected(server, { "x-tenant": "with-token" }, "delegated check without a token");
        const reply = await client.echo({ message: "hi" }, { metadata: { ...bearer(await token()), "x-tenant": "with-token" } });
        assert.equal(reply.message, "hi from alice");
        // Streams are refused before their first message: a gRPC status, and a plain 401 over HTTP (NDJSON or SSE).
        await assert.rejects(
          async () => {
            for await (const _ of client.countdown({ from: 2 }, { metadata: { "x-tenant": "nobody" } })) assert.fail("no message expected");
          },
          (err: { code: number }) => err.code === Code.UNAUTHENTICATED,
        );
        for (const accept of ["application/json", "text/event-stream"]) {
          const streamed = await fetch(`${server.httpUrl}/api/v1/countdown/2`, { headers: { accept, "x-tenant": "nobody" } });
          assert.equal(streamed.status, 401, accept);
          assert.equal(streamed.headers.get("www-authenticate"), "Bearer", accept);
          assert.equal(((await streamed.json()) as { code: number }).code, Code.UNAUTHENTICATED, accept);
        }
        assert.equal(overrideCalls, 12, "the override ran once for every call");
      },
      [tenantOnly],
    );
  });

  test("an override runs even when JWT_SECRET and API_KEYS are unset", async () => {
    const closed = defineService(FixtureService, {
      handlers: fixtureService.handlers,
      authorize: (ctx) => ctx.metadata.get("x-tenant")[0] === "t1",
    });
    await withServer(
      { HTTP_HEADER_PREFIXES: "x-tenant" },
      async (server) => {
        await assertRejected(server, {}, "no tenant");
        await assertAccepted(server, { "x-tenant": "t1" }, "tenant t1");
      },
      [closed],
    );
  });

  test("claimsOf is undefined without auth, and the default service works without credentials", async () => {
    let seen: unknown = "unset";
    const probe = defineService(FixtureService, {
      handlers: {
        ...fixtureService.handlers,
        echo: (request, ctx) => {
          seen = claimsOf(ctx);
          return { message: request.message };
        },
      },
    });
    await withServer({}, async (server) => assertAccepted(server, {}, "no auth"), [probe]);
    assert.equal(seen, undefined);
    await withServer({}, async (server) => assertAccepted(server, {}, "no auth, the default service"));
  });
});

describe("rejected calls and the rest of the chain", () => {
  test("consume no rate-limit tokens, write no response-time line, and leave one warn line each", async () => {
    await withServer({ ...JWT_ENV, RATE_LIMIT_PER_SECOND: "0.01", RATE_LIMIT_BURST: "1" }, async (server) => {
      // Fewer than the burst of rejection lines (5): each gets its line.
      for (let i = 0; i < 2; i++) await assertRejected(server, { authorization: "Bearer nope" }, `rejected call ${i}`);
      assert.ok(!server.logs.some((l) => l.msg === "response time"), "no response-time line for rejected calls");
      const warns = server.logs.filter((l) => l.msg === "unauthenticated");
      assert.equal(warns.length, 4, "one warn line per rejected call (2 over gRPC, 2 over HTTP)");
      for (const w of warns) {
        assert.equal(w.level, "warn");
        assert.equal(w.grpcMethod, "/fixture.v1.FixtureService/Echo");
        assert.equal(w.reason, "invalid credentials");
      }
      assert.ok(warns.some((w) => w.httpPath === "/api/v1/echo"));
      // The bucket (burst 1) is still full: the first valid call gets its token, the next finds none.
      const client = server.client(FixtureService);
      const valid = bearer(await token());
      assert.equal((await client.echo({ message: "first" }, { metadata: valid })).message, "first");
      assert.equal((await grpcError(client.echo({ message: "second" }, { metadata: valid }))).code, Code.RESOURCE_EXHAUSTED);
    });
  });
});

describe("a flood of bad credentials", () => {
  test("1,000 bad tokens write a few warn lines a second, each counting the ones dropped, and all 1,000 are counted in /metrics", async () => {
    await withServer(JWT_ENV, async (server) => {
      const client = server.client(FixtureService);
      const bad = { metadata: bearer(await token({ secret: "forged-0123456789abcdef-0123456789abcdef" })) };
      const started = performance.now();
      for (let batch = 0; batch < 20; batch++) {
        const codes = await Promise.all(Array.from({ length: 50 }, () => grpcError(client.echo({ message: "flood" }, bad))));
        assert.ok(codes.every((e) => e.code === Code.UNAUTHENTICATED));
      }
      const seconds = (performance.now() - started) / 1000;
      const lines = server.logs.filter((l) => l.msg === "unauthenticated");
      // A burst of 5, then 5 a second: however long the flood took on this machine, never more than that.
      assert.ok(lines.length >= 5, `${lines.length} lines`);
      assert.ok(lines.length <= 5 + Math.ceil(5 * seconds) + 1, `${lines.length} lines in ${seconds.toFixed(2)} s`);
      const reported = lines.reduce((sum, l) => sum + 1 + Number(l.dropped ?? 0), 0);
      assert.ok(reported <= 1000 && lines.some((l) => Number(l.dropped) > 0), "later lines count the dropped ones");
      for (const l of lines) assert.equal(l.reason, "invalid credentials");
      const metrics = await (await fetch(`${server.httpUrl}/metrics`)).text();
      const labels = 'grpc_type="unary",grpc_service="fixture.v1.FixtureService",grpc_method="Echo"';
      assert.match(metrics, new RegExp(`^grpc_server_unauthenticated_total\\{${labels},reason="invalid"\\} 1000$`, "m"));
      assert.match(metrics, new RegExp(`^grpc_server_handled_total\\{${labels},grpc_code="Unauthenticated"\\} 1000$`, "m"));
    });
  });
});

describe("secrets and credentials", () => {
  test("never reach the logs, the start-up summary or error bodies", async () => {
    const valid = await token();
    const forged = await token({ secret: "forged-SENTINEL-0123456789abcdef-0123456789" });
    const wrongKey = "wrong-key-SENTINEL-0123456789";
    const bodies: string[] = [];
    await withServer({ ...JWT_ENV, ...KEYS_ENV, LOG_LEVEL: "debug" }, async (server) => {
      const client = server.client(FixtureService);
      const debug = { "x-debug-log-level": "debug" };
      const calls: Headers[] = [
        { ...bearer(valid), ...debug },
        { ...bearer(forged), ...debug },
        { "x-api-key": KEY_1, ...debug },
        { "x-api-key": KEY_2 },
        { "x-api-key": wrongKey, ...debug },
        { ...bearer(forged), "x-api-key": wrongKey },
      ];
      for (const headers of calls) {
        await client.echo({ message: "hi", debug: true }, { metadata: headers }).catch(() => {});
        // A server error in an authenticated call is logged and reported with the call's fields.
        await client.fail({ panic: true }, { metadata: headers }).catch(() => {});
        const res = await httpEcho(server, headers);
        bodies.push(await res.text());
      }
      const starting = server.logs.find((l) => l.msg === "starting");
      const config = ` ${String(starting?.config)} `;
      assert.match(config, / JWT_SECRET=\[redacted\] /);
      assert.match(config, / API_KEYS=\[redacted\] /);
      assert.ok(config.includes(` JWT_ISSUER=${ISSUER} `), "what is not a secret stays readable");
      assert.ok(
        server.logs.some((l) => l.level === "error"),
        "the panics were logged",
      );
      assert.ok(server.logs.some((l) => l.msg === "unauthenticated"));
      const logs = server.logs.map((l) => JSON.stringify(l)).join("\n");
      const secrets: [string, string][] = [
        ["JWT_SECRET", SECRET],
        ["the first API key", KEY_1],
        ["the second API key", KEY_2],
        ["a valid token", valid],
        ["its signature", valid.split(".")[2] as string],
        ["a forged token", forged],
        ["a wrong API key", wrongKey],
      ];
      for (const [name, value] of secrets) {
        assert.ok(!logs.includes(value), `${name} is in the logs`);
        assert.ok(!bodies.some((b) => b.includes(value)), `${name} is in a response body`);
      }
      assert.doesNotMatch(logs, /SENTINEL/);
    });
  });
});

describe("make token", () => {
  test("prints a development JWT that the service accepts, with the issuer and audience of the settings", async () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), "token-"));
    try {
      const envFile = path.join(dir, ".env");
      fs.writeFileSync(envFile, `JWT_SECRET=${SECRET}\nJWT_ISSUER=${ISSUER}\nJWT_AUDIENCE=${AUDIENCE}\n`);
      // The file's values count only for variables the environment does not set (node --env-file).
      const env = { ...process.env };
      for (const k of ["JWT_SECRET", "JWT_ISSUER", "JWT_AUDIENCE"]) delete env[k];
      // -o: never reinstall dependencies from inside a test run.
      const make = (...args: string[]) =>
        run("make", ["-s", "-o", "node_modules/.package-lock.json", "token", `ENV_FILE=--env-file=${envFile}`, ...args], { env });
      const printed = (await make()).stdout.trim();
      assert.match(printed, /^[\w-]+\.[\w-]+\.[\w-]+$/, "only the token on stdout");
      const bob = (await make("SUB=bob", "TTL=60")).stdout.trim();
      await withServer(JWT_ENV, async (server) => {
        await assertAccepted(server, bearer(printed), "make token");
        await assertAccepted(server, bearer(bob), "make token SUB=bob");
        const subs = server.logs.filter((l) => l.msg === "response time").map((l) => l.sub);
        assert.deepEqual(subs, ["dev", "dev", "bob", "bob"]);
      });
      fs.writeFileSync(envFile, "LOG_LEVEL=info\n");
      await assert.rejects(make(), (err: { stderr: string }) => /JWT_SECRET is not set/.test(err.stderr));
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });
});
