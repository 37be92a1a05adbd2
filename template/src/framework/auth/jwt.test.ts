import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { SignJWT } from "jose";
import { loadConfig } from "../config/load.js";
import { signDevToken } from "./dev-token.js";
import { hs256Verifier, tokenVerifier, verifyOptions } from "./jwt.js";

const SECRET = "unit-test-secret-0123456789abcdef-0123";

describe("token verification", () => {
  test("is off without JWT_SECRET", () => {
    assert.equal(tokenVerifier(loadConfig({})), undefined);
  });

  test("checks iss and aud only when set, with the configured leeway, HS256 only, exp required unless JWT_REQUIRE_EXP=false", () => {
    assert.deepEqual(verifyOptions(loadConfig({ JWT_SECRET: SECRET })), {
      algorithms: ["HS256"],
      clockTolerance: 30,
      requiredClaims: ["exp"],
    });
    assert.deepEqual(verifyOptions(loadConfig({ JWT_SECRET: SECRET, JWT_REQUIRE_EXP: "false" })), {
      algorithms: ["HS256"],
      clockTolerance: 30,
    });
    assert.deepEqual(verifyOptions(loadConfig({ JWT_SECRET: SECRET, JWT_ISSUER: "i", JWT_AUDIENCE: "a", JWT_CLOCK_SKEW_SECONDS: "5" })), {
      algorithms: ["HS256"],
      clockTolerance: 5,
      requiredClaims: ["exp"],
      issuer: "i",
      audience: "a",
    });
  });

  test("a dev token verifies and returns its claims", async () => {
    const verify = tokenVerifier(loadConfig({ JWT_SECRET: SECRET, JWT_ISSUER: "i", JWT_AUDIENCE: "a" }))!;
    const claims = await verify(await signDevToken({ secret: SECRET, subject: "carol", issuer: "i", audience: "a", ttlSeconds: 60 }));
    assert.equal(claims.sub, "carol");
    assert.equal(claims.iss, "i");
    assert.ok(claims.exp! - claims.iat! === 60);
  });

  test("the HS256 key verifies HS256 alone, even if a caller widened the allowed algorithms", async () => {
    const verify = hs256Verifier(SECRET, { algorithms: ["HS256", "HS384", "HS512"] });
    const key = new TextEncoder().encode(SECRET);
    for (const alg of ["HS384", "HS512"]) {
      const token = await new SignJWT({ sub: "x" }).setProtectedHeader({ alg }).sign(key);
      await assert.rejects(verify(token), alg);
    }
  });
});
