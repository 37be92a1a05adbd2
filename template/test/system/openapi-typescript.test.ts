/**
 * The OpenAPI 3.1 document round-trips through openapi-typescript: the types it writes from the running
 * fixture service's /openapi/fixture.openapi.json (a copy of the sample API) type-check (with the project's tsc) against a small fetch client,
 * which then calls the service (Echo, Countdown as NDJSON, Sum with an NDJSON body, a google.rpc.Status error);
 * a client using a field wrongly does not type-check. The oneofs of a proto using every mapping become unions
 * that accept one member and refuse two.
 */
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { after, before, describe, test } from "node:test";
import { fileURLToPath, pathToFileURL } from "node:url";
import type { DescService } from "@bufbuild/protobuf";
import { writeOpenApiTypes } from "../../scripts/sdk/openapi-types.js";
import { methodInfo } from "../../src/framework/call/method.js";
import { buildOpenApi31 } from "../../src/framework/docs/openapi31.js";
import { compileRoutes } from "../../src/framework/gateway/routes.js";
import { startTestServer, type TestServer } from "../../src/framework/testing/harness.js";
import { fixtureService } from "../framework/fixtures/fixture-service.js";
import { ContractService } from "../gen/openapitest/v1/contract_pb.js";

const TEMPLATE = join(dirname(fileURLToPath(import.meta.url)), "..", "..");
const TSC = join(TEMPLATE, "node_modules", ".bin", "tsc");

const TSCONFIG = {
  compilerOptions: {
    target: "ES2022",
    lib: ["ES2023", "DOM", "DOM.Iterable"],
    module: "NodeNext",
    moduleResolution: "NodeNext",
    strict: true,
    noUncheckedIndexedAccess: true,
    noEmit: true,
    skipLibCheck: false,
    types: [],
  },
};

/** A client as a consumer would write it: plain fetch, every type from the generated `paths` and `components`. */
const CLIENT = `import type { components, paths } from "./api.js";

type Json<T> = T extends { content: { "application/json": infer B } } ? B : never;
export type EchoRequest = Json<paths["/api/v1/echo"]["post"]["requestBody"]>;
export type EchoResponse = Json<paths["/api/v1/echo"]["post"]["responses"][200]>;
export type CountdownLine = paths["/api/v1/countdown/{from}"]["get"]["responses"][200]["content"]["application/x-ndjson"];
export type SumRequest = paths["/api/v1/sum"]["post"]["requestBody"]["content"]["application/x-ndjson"];
export type SumResponse = Json<paths["/api/v1/sum"]["post"]["responses"][200]>;
export type Status = components["schemas"]["google.rpc.Status"];

export async function echo(base: string, body: EchoRequest): Promise<EchoResponse> {
  const res = await fetch(base + "/api/v1/echo", { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify(body) });
  if (!res.ok) throw (await res.json()) as Status;
  return (await res.json()) as EchoResponse;
}

export async function countdown(base: string, from: paths["/api/v1/countdown/{from}"]["get"]["parameters"]["path"]["from"]): Promise<number[]> {
  const res = await fetch(base + "/api/v1/countdown/" + from);
  const lines = (await res.text()).split("\\n").filter(Boolean).map((l) => JSON.parse(l) as CountdownLine);
  return lines.map((l) => l.result?.remaining ?? -1);
}

export async function sum(base: string, values: SumRequest[]): Promise<SumResponse> {
  const body = values.map((v) => JSON.stringify(v)).join("\\n");
  const res = await fetch(base + "/api/v1/sum", { method: "POST", headers: { "content-type": "application/x-ndjson" }, body });
  return (await res.json()) as SumResponse;
}

export async function fail(base: string, code: number): Promise<Status> {
  const res = await fetch(base + "/api/v1/fail", { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ code, message: "no" }) });
  return (await res.json()) as Status;
}

export async function run(base: string) {
  const e = await echo(base, { message: "typed", traceId: "t-1" });
  const s = await sum(base, [{ value: "2" }, { value: "40" }]);
  // 64-bit integers are strings in proto3 JSON, and in the types.
  const total: string | undefined = s.sum;
  return { echo: e.message, traceId: e.traceId, countdown: await countdown(base, 3), sum: total, count: s.count, error: await fail(base, 5) };
}
`;

function tsc(dir: string): { ok: boolean; output: string } {
  const r = spawnSync(TSC, ["-p", join(dir, "tsconfig.json")], { encoding: "utf8" });
  return { ok: r.status === 0, output: `${r.stdout}${r.stderr}` };
}

function document31(service: DescService) {
  const routes = compileRoutes(
    service.methods.map((desc) => ({ info: methodInfo(desc), invoke: () => Promise.reject(new Error("unused")) })),
  );
  return buildOpenApi31(routes, { title: "t", version: "1", services: [service] });
}

describe("openapi-typescript round trip", () => {
  let server: TestServer;
  let dir: string;
  before(async () => {
    server = await startTestServer([fixtureService]);
    dir = mkdtempSync(join(tmpdir(), "openapi-ts-"));
    writeFileSync(join(dir, "tsconfig.json"), JSON.stringify(TSCONFIG));
  });
  after(async () => {
    await server.close();
    rmSync(dir, { recursive: true, force: true });
  });

  test("the running service's document gives types a fetch client type-checks against and calls it with", async () => {
    await writeOpenApiTypes(`${server.httpUrl}/openapi/fixture.openapi.json`, join(dir, "api.ts"));
    writeFileSync(join(dir, "client.ts"), CLIENT);
    const checked = tsc(dir);
    assert.ok(checked.ok, checked.output);

    const client = (await import(pathToFileURL(join(dir, "client.ts")).href)) as { run(base: string): Promise<Record<string, unknown>> };
    const result = await client.run(server.httpUrl);
    assert.deepEqual(
      { ...result, error: undefined },
      {
        echo: "typed",
        traceId: "t-1",
        countdown: [3, 2, 1],
        sum: "42",
        count: 2,
        error: undefined,
      },
    );
    assert.deepEqual(result.error, { code: 5, message: "no", details: [] });

    // The types mean something: a number where the proto has a string, or an unknown field, does not compile.
    writeFileSync(join(dir, "client.ts"), `${CLIENT}\nvoid echo("", { message: 1 });\nvoid sum("", [{ valu: "1" }]);\n`);
    const wrong = tsc(dir);
    assert.equal(wrong.ok, false);
    assert.match(wrong.output, /client\.ts\(\d+,\d+\): error TS2322/);
    assert.match(wrong.output, /valu/);
  });

  test("a oneof becomes a union: one member type-checks, two do not; a protovalidate-required oneof needs one", async () => {
    const sub = mkdtempSync(join(dir, "contract-"));
    writeFileSync(join(sub, "tsconfig.json"), JSON.stringify(TSCONFIG));
    writeFileSync(join(sub, "contract.json"), JSON.stringify(document31(ContractService)));
    await writeOpenApiTypes(join(sub, "contract.json"), join(sub, "api.ts"));
    const item = `import type { components } from "./api.js";\ntype Item = components["schemas"]["openapitest.v1.Item"];\n`;
    writeFileSync(join(sub, "item.ts"), `${item}export const ok: Item = { name: "shelves/a/items/b", title: "T", book: "b", url: "u" };\n`);
    const checked = tsc(sub);
    assert.ok(checked.ok, checked.output);
    writeFileSync(join(sub, "item.ts"), `${item}export const two: Item = { name: "n", title: "T", book: "b", disc: 1 };\n`);
    assert.equal(tsc(sub).ok, false, "two members of one oneof");
    writeFileSync(join(sub, "item.ts"), `${item}export const none: Item = { name: "n", title: "T" };\n`);
    assert.equal(tsc(sub).ok, false, "the required oneof unset");
  });
});
