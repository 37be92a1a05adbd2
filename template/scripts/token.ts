// Prints a development JWT: HS256, signed with JWT_SECRET, with `iss`/`aud` from JWT_ISSUER/JWT_AUDIENCE when
// they are set. `make token` runs it with .env loaded; only the token goes to stdout, so it can be captured:
//
//   TOKEN=$(make -s token)                      sub "dev", valid one hour
//   make -s token SUB=alice TTL=600             another subject and lifetime
//   node --env-file=.env --import tsx scripts/token.ts --sub alice --ttl 600
import { parseArgs } from "node:util";
import { signDevToken } from "../src/framework/auth/dev-token.js";
import { loadConfigOrExit } from "../src/framework/config/load.js";

function fail(message: string): never {
  process.stderr.write(`token: ${message}\n`);
  process.exit(1);
}

const { values } = parseArgs({ options: { sub: { type: "string", default: "dev" }, ttl: { type: "string", default: "3600" } } });
const ttlSeconds = Number(values.ttl);
if (!Number.isInteger(ttlSeconds) || ttlSeconds <= 0)
  fail(`--ttl must be a whole number of seconds above 0 (got ${JSON.stringify(values.ttl)})`);
if (!values.sub) fail("--sub must not be empty");

const config = loadConfigOrExit("token");
if (config.JWT_SECRET === undefined) fail("JWT_SECRET is not set: put it in .env (`openssl rand -base64 32` makes one)");

const token = await signDevToken({
  secret: config.JWT_SECRET,
  subject: values.sub,
  issuer: config.JWT_ISSUER,
  audience: config.JWT_AUDIENCE,
  ttlSeconds,
});
process.stdout.write(`${token}\n`);
