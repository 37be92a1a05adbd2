// Tokens from an identity provider (JWT_JWKS_URL, JWT_OIDC_ISSUER) against the real server on every protocol, with a
// provider on loopback serving keys made with jose: the four algorithms, rotation without a restart, readiness until
// the key set was fetched, OIDC discovery and its issuer, and the attacks on key choice (alg confusion, jku/x5u/jwk).
import assert from "node:assert/strict";
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { after, before, describe, test } from "node:test";
import { exportJWK, exportSPKI, generateKeyPair, SignJWT, UnsecuredJWT } from "jose";
import { loadConfig } from "../../src/framework/config/load.js";
import { startTestServer, type TestServer } from "../../src/framework/testing/harness.js";
import { PlainService } from "../gen/authrules/v1/rules_pb.js";
import { PLAIN, plainService } from "./fixtures/rules-services.js";
import { callEveryProtocol, everywhere } from "./support/every-protocol.js";
import { KeyProvider } from "./support/key-provider.js";

const SECRET = "jwt-secret-SENTINEL-0123456789abcdef-0123456789abcdef";
const AUDIENCE = "svc-test";
// A service without auth rules: every method, over every protocol, needs a token.
const guarded = plainService;
const bearer = (jwt: string) => ({ authorization: `Bearer ${jwt}` });
const every = (server: TestServer, headers: Record<string, string>) => callEveryProtocol(server, headers, PLAIN);

async function readyStatus(server: TestServer): Promise<number> {
  return (await fetch(`${server.httpUrl}/readycheck`)).status;
}

/** Resolves once the log has a line with this message (the server logs as it goes; awaited by event-loop turns). */
async function logged(server: TestServer, msg: string): Promise<void> {
  while (!server.logs.some((l) => l.msg === msg)) await new Promise((r) => setTimeout(r, 10));
}

describe("JWT_JWKS_URL", () => {
  let provider: KeyProvider;
  before(async () => {
    provider = await KeyProvider.start();
  });
  after(() => provider.close());

  test("tokens signed with the provider's RS256, PS256, ES256 and EdDSA keys are accepted on every protocol; readiness waited for the key set", async () => {
    const keys = await Promise.all(["RS256", "PS256", "ES256", "EdDSA"].map((alg) => provider.addKey(alg, `k-${alg}`)));
    const server = await startTestServer([guarded], { JWT_JWKS_URL: provider.jwksUrl, JWT_AUDIENCE: AUDIENCE });
    try {
      await logged(server, "identity provider's key set fetched");
      assert.equal(await readyStatus(server), 200);
      for (const key of keys) {
        assert.deepEqual(await every(server, bearer(await provider.sign(key, { aud: AUDIENCE }))), everywhere("ok"), key.alg);
        assert.deepEqual(
          await every(server, bearer(await provider.sign(key, { aud: "another-service" }))),
          everywhere("unauthenticated"),
          `${key.alg} for another audience`,
        );
      }
      assert.equal(provider.jwksFetches, 1, "one fetch served every call");
      assert.ok(!server.logs.some((l) => String(l.msg).includes("without JWT_AUDIENCE")), "JWT_AUDIENCE is set");
    } finally {
      await server.close();
      provider.published.clear();
    }
  });

  test("JWT_ALGORITHMS narrows the accepted algorithms", async () => {
    const es = await provider.addKey("ES256", "es");
    const rs = await provider.addKey("RS256", "rs");
    const server = await startTestServer([guarded], { JWT_JWKS_URL: provider.jwksUrl, JWT_ALGORITHMS: "ES256" });
    try {
      const warning = server.logs.find((l) => String(l.msg).includes("without JWT_AUDIENCE"));
      assert.equal(warning?.level, "warn", "start-up warns that any token of the provider is accepted without JWT_AUDIENCE");
      assert.deepEqual(await every(server, bearer(await provider.sign(es))), everywhere("ok"));
      assert.deepEqual(await every(server, bearer(await provider.sign(rs))), everywhere("unauthenticated"));
    } finally {
      await server.close();
      provider.published.clear();
    }
  });

  test("a key rotated in at the provider is accepted without a restart; unknown kids fetch at most once per cool-down", async () => {
    const old = await provider.addKey("RS256", "old");
    const server = await startTestServer([guarded], { JWT_JWKS_URL: provider.jwksUrl, JWT_JWKS_COOL_DOWN_SECONDS: "1" });
    try {
      await logged(server, "identity provider's key set fetched");
      const client = server.client(PlainService);
      assert.equal((await client.get({ text: "old" }, { metadata: bearer(await provider.sign(old)) })).text, "old");
      const fetchesBefore = provider.jwksFetches;
      // The provider rotates: a new key in, the old one out.
      const next = await provider.addKey("ES256", "next");
      provider.published.delete("old");
      const token = await provider.sign(next);
      const started = performance.now();
      let calls = 0;
      // Until the cool-down since the last fetch has passed, the new kid is refused; then one fetch finds it.
      for (;;) {
        calls++;
        const ok = await client.get({ text: "next" }, { metadata: bearer(token) }).then(
          () => true,
          () => false,
        );
        if (ok) break;
        assert.ok(performance.now() - started < 10_000, "the rotated key was never accepted");
        await new Promise((r) => setTimeout(r, 50));
      }
      const seconds = (performance.now() - started) / 1000;
      assert.ok(
        provider.jwksFetches - fetchesBefore <= Math.ceil(seconds) + 1,
        `${provider.jwksFetches - fetchesBefore} fetches for ${calls} calls`,
      );
      assert.deepEqual(await every(server, bearer(token)), everywhere("ok"), "the rotated key on every protocol");
      // The old key is gone from the provider; after the next fetch its tokens are refused.
      const unknown = await provider.addKey("ES256", "unknown", false);
      const fetches = provider.jwksFetches;
      const flood = await Promise.all(
        Array.from({ length: 50 }, async () =>
          client.get({ text: "x" }, { metadata: bearer(await provider.sign(unknown)) }).then(
            () => "ok",
            (e: { code: number }) => e.code,
          ),
        ),
      );
      assert.ok(flood.every((c) => c === 16));
      assert.ok(provider.jwksFetches - fetches <= 1, "50 tokens with an unknown kid: at most one fetch");
    } finally {
      await server.close();
      provider.published.clear();
    }
  });

  test("while the key set cannot be fetched, readiness fails and no token gets through; once fetched, both recover", async () => {
    const key = await provider.addKey("ES256", "k");
    provider.down = true;
    const server = await startTestServer([guarded], { JWT_JWKS_URL: provider.jwksUrl });
    try {
      await logged(server, "cannot fetch the identity provider's key set: not ready");
      assert.equal(await readyStatus(server), 503);
      assert.deepEqual(await every(server, bearer(await provider.sign(key))), everywhere("unauthenticated"));
      provider.down = false;
      await logged(server, "identity provider's key set fetched");
      assert.equal(await readyStatus(server), 200);
      assert.deepEqual(await every(server, bearer(await provider.sign(key))), everywhere("ok"));
    } finally {
      await server.close();
      provider.down = false;
      provider.published.clear();
    }
  });
});

describe("JWT_OIDC_ISSUER", () => {
  test("finds the key set through discovery and requires the issuer as `iss`", async () => {
    const provider = await KeyProvider.start();
    const key = await provider.addKey("RS256", "k");
    const server = await startTestServer([guarded], { JWT_OIDC_ISSUER: provider.url });
    try {
      await logged(server, "identity provider's key set fetched");
      assert.equal(provider.discoveries, 1);
      assert.deepEqual(await every(server, bearer(await provider.sign(key, { iss: provider.url }))), everywhere("ok"));
      for (const iss of [undefined, "https://evil.test", `${provider.url}/`]) {
        const claims = iss === undefined ? {} : { iss };
        assert.deepEqual(await every(server, bearer(await provider.sign(key, claims))), everywhere("unauthenticated"), `iss ${iss}`);
      }
    } finally {
      await server.close();
      await provider.close();
    }
  });

  test("a discovery document naming another issuer is never trusted: not ready, every token refused", async () => {
    const provider = await KeyProvider.start();
    provider.claimedIssuer = "https://evil.test";
    const key = await provider.addKey("RS256", "k");
    const server = await startTestServer([guarded], { JWT_OIDC_ISSUER: provider.url });
    try {
      await logged(server, "cannot fetch the identity provider's key set: not ready");
      assert.equal(await readyStatus(server), 503);
      for (const iss of [provider.url, "https://evil.test"])
        assert.deepEqual(await every(server, bearer(await provider.sign(key, { iss }))), everywhere("unauthenticated"));
      assert.equal(provider.jwksFetches, 0, "the key set it names is never fetched");
    } finally {
      await server.close();
      await provider.close();
    }
  });
});

describe("attacks on the choice of key, with JWT_SECRET and JWT_JWKS_URL both on", () => {
  let provider: KeyProvider;
  let server: TestServer;
  /** A server of the attacker's: the key set a token's header points to. It must never be asked. */
  let elsewhere: ReturnType<typeof createServer>;
  let elsewhereHits = 0;
  let elsewhereUrl = "";
  before(async () => {
    provider = await KeyProvider.start();
    elsewhere = createServer((_req, res) => {
      elsewhereHits++;
      res.writeHead(404).end();
    });
    await new Promise<void>((resolve) => elsewhere.listen(0, "127.0.0.1", resolve));
    elsewhereUrl = `http://127.0.0.1:${(elsewhere.address() as AddressInfo).port}`;
    await provider.addKey("RS256", "rsa");
    await provider.addKey("ES256", "ec");
    server = await startTestServer([guarded], { JWT_SECRET: SECRET, JWT_JWKS_URL: provider.jwksUrl });
    await logged(server, "identity provider's key set fetched");
  });
  after(async () => {
    await server.close();
    await provider.close();
    elsewhere.close();
  });

  test("both kinds of valid token are accepted: HS256 with the secret, RS256/ES256 with the key set", async () => {
    const hs = await new SignJWT({ sub: "alice" })
      .setProtectedHeader({ alg: "HS256" })
      .setExpirationTime("1h")
      .sign(new TextEncoder().encode(SECRET));
    assert.deepEqual(await every(server, bearer(hs)), everywhere("ok"), "HS256");
    for (const kid of ["rsa", "ec"])
      assert.deepEqual(await every(server, bearer(await provider.sign(provider.published.get(kid)!))), everywhere("ok"), kid);
  });

  test("forged tokens are 401 on every protocol, and the key sets their headers name are never fetched", async () => {
    const rsa = provider.published.get("rsa")!;
    const pem = await exportSPKI(rsa.publicKey);
    const hmac = (key: string | Uint8Array, header: Record<string, unknown> = {}) =>
      new SignJWT({ sub: "mallory" })
        .setProtectedHeader({ alg: "HS256", ...header })
        .setExpirationTime("1h")
        .sign(typeof key === "string" ? new TextEncoder().encode(key) : key);
    const attacker = await generateKeyPair("RS256", { extractable: true });
    const attackerJwk = { ...(await exportJWK(attacker.publicKey)), kid: "attacker", alg: "RS256" };
    const signedByAttacker = (header: Record<string, unknown>) =>
      new SignJWT({ sub: "mallory" })
        .setProtectedHeader({ alg: "RS256", kid: "attacker", ...header })
        .setExpirationTime("1h")
        .sign(attacker.privateKey);
    const segment = (v: unknown) => Buffer.from(JSON.stringify(v)).toString("base64url");
    const forged: [string, string][] = [
      ["HS256 signed with the provider's public key as PEM", await hmac(pem)],
      ["HS256 signed with the PEM, carrying the key's kid", await hmac(pem, { kid: "rsa" })],
      ["HS256 signed with the public key as a JWK (JSON)", await hmac(JSON.stringify(rsa.publicJwk), { kid: "rsa" })],
      ["HS256 signed with the public key's modulus bytes", await hmac(Buffer.from(rsa.publicJwk.n!, "base64url"), { kid: "rsa" })],
      ["jku pointing elsewhere", await signedByAttacker({ jku: `${elsewhereUrl}/jwks.json` })],
      ["x5u pointing elsewhere", await signedByAttacker({ x5u: `${elsewhereUrl}/cert.pem` })],
      ["jwk header with the attacker's key", await signedByAttacker({ jwk: attackerJwk })],
      ["the attacker's key under the provider's kid", await signedByAttacker({ kid: "rsa" })],
      [
        "the attacker's key under the provider's kid, jku elsewhere",
        await signedByAttacker({ kid: "rsa", jku: `${elsewhereUrl}/jwks.json` }),
      ],
      ["alg none", new UnsecuredJWT({ sub: "mallory" }).setExpirationTime("1h").encode()],
      ["alg none with the provider's kid", `${segment({ alg: "none", kid: "rsa" })}.${segment({ sub: "mallory", exp: 2e9 })}.`],
      [
        "HS512 with the secret",
        await new SignJWT({ sub: "m" }).setProtectedHeader({ alg: "HS512" }).setExpirationTime("1h").sign(new TextEncoder().encode(SECRET)),
      ],
      ["an unknown alg", `${segment({ alg: "XS256", kid: "rsa" })}.${segment({ sub: "mallory", exp: 2e9 })}.c2ln`],
      ["RS1", `${segment({ alg: "RS1", kid: "rsa" })}.${segment({ sub: "mallory", exp: 2e9 })}.c2ln`],
      [
        "an ES256 signature labelled RS256",
        (await provider.sign(provider.published.get("ec")!)).replace(/^[^.]+/, segment({ alg: "RS256", kid: "rsa" })),
      ],
    ];
    for (const [what, jwt] of forged) assert.deepEqual(await every(server, bearer(jwt)), everywhere("unauthenticated"), what);
    assert.equal(elsewhereHits, 0, "no key set named in a token was fetched");
  });
});

describe("the key set's URL", () => {
  test("must be https, or plain http to a loopback address: others are refused at start-up, naming the variable", () => {
    for (const url of [
      "http://idp.example.com/jwks.json",
      "http://10.0.0.1/jwks",
      "ftp://x/jwks",
      "not a url",
      "https://u:p@idp.example.com/jwks",
    ]) {
      for (const name of ["JWT_JWKS_URL", "JWT_OIDC_ISSUER"]) {
        assert.throws(
          () => loadConfig({ [name]: url }),
          (err: Error) => err.message.includes(`${name}: expected an https:// URL`),
          `${name}=${url}`,
        );
      }
    }
    for (const url of ["https://idp.example.com/jwks.json", "http://127.0.0.1:8080/jwks", "http://localhost/jwks", "http://[::1]:9/jwks"])
      assert.equal(loadConfig({ JWT_JWKS_URL: url }).JWT_JWKS_URL, url);
    assert.throws(() => loadConfig({ JWT_ALGORITHMS: "RS256,HS256" }), /JWT_ALGORITHMS: .*HS256 is not one/);
    assert.throws(() => loadConfig({ JWT_ALGORITHMS: "none" }), /JWT_ALGORITHMS/);
    assert.throws(() => loadConfig({ JWT_JWKS_URL: "https://a.test/jwks", JWT_OIDC_ISSUER: "https://a.test" }), /not both/);
  });
});
