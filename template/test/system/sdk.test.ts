/**
 * `make sdk`'s package, built from the fixture service's protos (test/proto/fixture), packed and installed into an
 * empty folder as a consumer would (npm install of the tarball):
 * the Node script of docs/consumers.md calls Echo, Countdown, Sum and Chat over gRPC and Echo over Connect, and reads
 * a validation failure's google.rpc.BadRequest, with full types (type-checked
 * with the project's tsc, then run by Node), and a page bundled by esbuild from the installed package calls Echo
 * and Countdown from headless Chromium on another origin.
 */
import assert from "node:assert/strict";
import { execFile, spawnSync } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { createServer, type Server } from "node:http";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { after, before, describe, test } from "node:test";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";
import { build } from "esbuild";
import { buildSdk } from "../../scripts/sdk/build-sdk.js";
import { startTestServer, type TestServer } from "../../src/framework/testing/harness.js";
import { fixtureService } from "../framework/fixtures/fixture-service.js";
import { launchChromium } from "./chromium.js";

const TEMPLATE = join(dirname(fileURLToPath(import.meta.url)), "..", "..");
const run = promisify(execFile);
/** The fixture service's SDK: `make sdk` with SDK_PROTO_DIR=test/proto/fixture SDK_NAME=fixture-client. */
const SDK_PROTO_DIR = "test/proto/fixture";
const SDK_NAME = "fixture-client";

/**
 * The Node script of docs/consumers.md: the block that starts with `// consumer-client.ts`, written for the sample
 * API's SDK (example-client, ExampleService). The framework's test builds the SDK of the fixture service instead
 * (a copy of the sample API: same methods and messages, never changed by a team), so the script is run with those
 * two names swapped; the rest of it is exactly as the page shows it.
 */
const NODE_CLIENT = (() => {
  const page = readFileSync(join(TEMPLATE, "docs", "consumers.md"), "utf8");
  const block = /^```ts\n(\/\/ consumer-client\.ts\n[\s\S]*?)^```$/m.exec(page);
  assert.ok(block, "docs/consumers.md shows the consumer's Node script");
  const script = block[1]!;
  // Plain strings, not regexes: create-grpc-svc renames both to the new service's (a scoped name holds a `/`).
  assert.ok(script.includes('from "example-client/node"'), "the script imports the sample API's SDK");
  assert.ok(script.includes("createClient(ExampleService,"), "the script calls ExampleService");
  return script.replaceAll("example-client", SDK_NAME).replaceAll("ExampleService", "FixtureService");
})();

const PAGE = `import { createClient, createConnectTransport, FixtureService } from "${SDK_NAME}/web";

const api = {
  async echo(baseUrl: string, message: string): Promise<string> {
    return (await createClient(FixtureService, createConnectTransport({ baseUrl })).echo({ message })).message;
  },
  async countdown(baseUrl: string, from: number): Promise<number[]> {
    const seen: number[] = [];
    for await (const r of createClient(FixtureService, createConnectTransport({ baseUrl })).countdown({ from })) seen.push(r.remaining);
    return seen;
  },
};
export type PageApi = typeof api;
(globalThis as unknown as { api: PageApi }).api = api;
`;

describe("the packed SDK in an empty folder", () => {
  let dir: string;
  let service: TestServer;
  let pages: Server;
  let origin: string;
  let script = "";
  before(async () => {
    pages = createServer((req, res) => {
      if (req.url === "/app.js") res.writeHead(200, { "content-type": "text/javascript" }).end(script);
      else
        res
          .writeHead(200, { "content-type": "text/html" })
          .end('<!doctype html><meta charset="utf-8"><script type="module" src="/app.js"></script>');
    });
    await new Promise<void>((resolve) => pages.listen(0, "127.0.0.1", resolve));
    origin = `http://localhost:${(pages.address() as { port: number }).port}`;
    service = await startTestServer([fixtureService], { CORS_ALLOWED_ORIGINS: origin });

    const tarball = await buildSdk({ protoDir: SDK_PROTO_DIR, name: SDK_NAME });
    dir = mkdtempSync(join(tmpdir(), "sdk-consumer-"));
    writeFileSync(join(dir, "package.json"), JSON.stringify({ name: "consumer", private: true, type: "module" }));
    await run("npm", ["install", "--prefer-offline", "--no-audit", "--no-fund", tarball], { cwd: dir });
    writeFileSync(
      join(dir, "tsconfig.json"),
      JSON.stringify({
        compilerOptions: {
          target: "ES2022",
          lib: ["ES2023", "DOM"],
          module: "NodeNext",
          moduleResolution: "NodeNext",
          strict: true,
          noEmit: true,
          allowImportingTsExtensions: true,
          typeRoots: [join(TEMPLATE, "node_modules", "@types")],
          types: ["node"],
        },
        include: ["*.ts"],
      }),
    );
  });
  after(async () => {
    await service?.close();
    pages?.close();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  test("a Node script type-checks against it and calls Echo, Countdown, Sum and Chat over gRPC, Echo over Connect", async () => {
    writeFileSync(join(dir, "client.ts"), NODE_CLIENT);
    writeFileSync(join(dir, "page.ts"), PAGE);
    const checked = spawnSync(join(TEMPLATE, "node_modules", ".bin", "tsc"), ["-p", join(dir, "tsconfig.json")], { encoding: "utf8" });
    assert.equal(checked.status, 0, `${checked.stdout}${checked.stderr}`);

    const grpcUrl = `http://${service.grpcAddress}`;
    const { stdout } = await run(process.execPath, [join(dir, "client.ts"), grpcUrl, service.httpUrl], { cwd: dir });
    assert.deepEqual(JSON.parse(stdout), {
      echo: "from the sdk",
      remaining: [3, 2, 1],
      sum: "42",
      count: 2,
      chat: ["1:a", "2:b"],
      connect: "over connect",
      rest: "typed REST body",
      refused: ["message"],
    });

    // The types are the service's: a field it does not have fails the check.
    writeFileSync(join(dir, "client.ts"), `${NODE_CLIENT}\nawait grpc.echo({ mesage: "typo" });\n`);
    const wrong = spawnSync(join(TEMPLATE, "node_modules", ".bin", "tsc"), ["-p", join(dir, "tsconfig.json")], { encoding: "utf8" });
    assert.notEqual(wrong.status, 0);
    assert.match(`${wrong.stdout}`, /mesage/);
    writeFileSync(join(dir, "client.ts"), NODE_CLIENT);
  });

  test("a page bundled by esbuild from it calls Echo and Countdown from headless Chromium", async () => {
    writeFileSync(join(dir, "page.ts"), PAGE);
    const bundle = await build({
      entryPoints: [join(dir, "page.ts")],
      absWorkingDir: dir,
      bundle: true,
      write: false,
      format: "esm",
      platform: "browser",
      target: "chrome120",
      logLevel: "silent",
    });
    script = bundle.outputFiles[0]!.text;
    assert.doesNotMatch(script, /connect-node|node:http2/, "the browser entry pulls in nothing of Node");
    const browser = await launchChromium();
    try {
      const page = await browser.newPage();
      await page.goto(origin);
      await page.waitForFunction(() => "api" in globalThis);
      type Api = { echo(b: string, m: string): Promise<string>; countdown(b: string, f: number): Promise<number[]> };
      const echo = await page.evaluate(
        ([base]) => (globalThis as unknown as { api: Api }).api.echo(base!, "from a page"),
        [service.httpUrl],
      );
      assert.equal(echo, "from a page");
      const countdown = await page.evaluate(([base]) => (globalThis as unknown as { api: Api }).api.countdown(base!, 3), [service.httpUrl]);
      assert.deepEqual(countdown, [3, 2, 1]);
    } finally {
      await browser.close();
    }
  });
});
