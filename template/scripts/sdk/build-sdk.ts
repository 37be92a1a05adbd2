// make sdk: writes sdk/, the npm package `<name>-client` (ESM with .d.ts) a consumer of this service installs:
// the messages (protoc-gen-es), Connect clients for browsers (./web, @connectrpc/connect-web) and Node (./node,
// @connectrpc/connect-node: gRPC, Connect and gRPC-Web transports), and the OpenAPI types (./openapi, from
// openapi-typescript). Then `npm pack` in sdk/ makes the tarball to publish or install.
//
// Run: node --import tsx scripts/sdk/build-sdk.ts   (make sdk)
// SDK_PROTO_DIR (default proto) points it at another folder of protos, e.g. test/proto/fixture for the framework's
// own SDK test, and SDK_NAME (default <name>-client) names the package; the vendored protos still come from proto/.
import { execFile } from "node:child_process";
import { existsSync, mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { dirname, join, relative } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";
import { promisify } from "node:util";
import type { DescFile, DescService } from "@bufbuild/protobuf";
import { methodInfo } from "../../src/framework/call/method.js";
import { buildOpenApi31 } from "../../src/framework/docs/openapi31.js";
import { compileRoutes } from "../../src/framework/gateway/routes.js";
import { writeOpenApiTypes } from "./openapi-types.js";

const ROOT = join(dirname(fileURLToPath(import.meta.url)), "..", "..");
const SDK = join(ROOT, "sdk");
/** Protos gathered from elsewhere or the framework's own: generated into the SDK (imports need them), not re-exported. */
const NOT_THE_API = /^(google|grpc|buf|grpcsvc)\//;
const run = promisify(execFile);

/** The API's generated files (the vendored protos' aside), as sdk/src-relative module paths. */
function apiModules(gen = join(SDK, "src", "gen")): string[] {
  return readdirSync(gen, { recursive: true, encoding: "utf8" })
    .map((f) => f.replaceAll("\\", "/"))
    .filter((f) => f.endsWith("_pb.ts") && !NOT_THE_API.test(f))
    .sort()
    .map((f) => `./gen/${f.replace(/\.ts$/, ".js")}`);
}

/** buf's inputs: all of proto/, or proto/'s vendored protos and the other folder, as a path of its buf.yaml module. */
function protoInputs(dir: string): object[] {
  if (dir === "proto") return [{ directory: "proto" }];
  const modules = [...readFileSync(join(ROOT, "buf.yaml"), "utf8").matchAll(/^\s*-\s*path:\s*(\S+)\s*$/gm)].map((m) => m[1]!);
  const module = modules.filter((m) => dir === m || dir.startsWith(`${m}/`)).sort((a, b) => b.length - a.length)[0];
  if (module === undefined) throw new Error(`SDK_PROTO_DIR=${dir} is in none of buf.yaml's modules (${modules.join(", ")})`);
  const vendored = readdirSync(join(ROOT, "proto"))
    .filter((d) => NOT_THE_API.test(`${d}/`))
    .map((d) => `proto/${d}`);
  return [{ directory: "proto", paths: vendored }, module === dir ? { directory: dir } : { directory: module, paths: [dir] }];
}

const pkg = JSON.parse(readFileSync(join(ROOT, "package.json"), "utf8")) as {
  name: string;
  version: string;
  dependencies: Record<string, string>;
  devDependencies: Record<string, string>;
};
const version = (name: string) => pkg.dependencies[name] ?? pkg.devDependencies[name]!;

export interface SdkOptions {
  /** The folder of the API's protos, relative to the project (default SDK_PROTO_DIR, else proto). */
  protoDir?: string;
  /** The package's name (default SDK_NAME, else <name>-client). */
  name?: string;
}

export async function buildSdk(options: SdkOptions = {}): Promise<string> {
  const protoDir = (options.protoDir ?? (process.env.SDK_PROTO_DIR || "proto")).replace(/\/+$/, "");
  const name = options.name ?? (process.env.SDK_NAME || `${pkg.name}-client`);
  rmSync(SDK, { recursive: true, force: true });
  mkdirSync(join(SDK, "src"), { recursive: true });

  // Every proto of proto/ (or SDK_PROTO_DIR's with proto/'s vendored ones), buf/validate and google/rpc included: the SDK needs nothing but its npm dependencies
  // (google/rpc/error_details_pb.js holds BadRequestSchema and the other standard error details).
  const template = {
    version: "v2",
    clean: true,
    inputs: protoInputs(protoDir),
    plugins: [{ local: "protoc-gen-es", out: "sdk/src/gen", opt: ["target=ts", "import_extension=js"] }],
  };
  await run("npx", ["--no-install", "buf", "generate", "--template", JSON.stringify(template)], { cwd: ROOT });

  const modules = apiModules();
  const services: DescService[] = [];
  for (const m of modules) {
    const mod = (await import(pathToFileURL(join(SDK, "src", m.replace(/\.js$/, ".ts"))).href)) as Record<string, unknown>;
    for (const value of Object.values(mod)) {
      if ((value as DescFile)?.kind === "file") services.push(...(value as DescFile).services);
    }
  }

  // The OpenAPI 3.1 document the service serves at /openapi/<stem>.openapi.json (auth schemes aside: they follow its settings).
  const routes = compileRoutes(
    services.flatMap((s) => s.methods.map((desc) => ({ info: methodInfo(desc), invoke: () => Promise.reject(new Error("unused")) }))),
  );
  const doc = buildOpenApi31(routes, { title: pkg.name, version: pkg.version, services, sse: true });
  writeFileSync(join(SDK, "openapi.json"), `${JSON.stringify(doc, null, 2)}\n`);
  await writeOpenApiTypes(join(SDK, "openapi.json"), join(SDK, "src", "openapi.ts"));

  const reexports = modules.map((m) => `export * from "${m}";`).join("\n");
  writeFileSync(
    join(SDK, "src", "index.ts"),
    `// The service's messages and service descriptors, and Connect's client API.\n${reexports}\nexport { Code, ConnectError, createClient, type Client } from "@connectrpc/connect";\nexport type { components, paths } from "./openapi.js";\n`,
  );
  writeFileSync(
    join(SDK, "src", "web.ts"),
    `// For browsers: Connect and gRPC-Web over fetch.\nexport * from "./index.js";\nexport { createConnectTransport, createGrpcWebTransport } from "@connectrpc/connect-web";\n`,
  );
  writeFileSync(
    join(SDK, "src", "node.ts"),
    `// For Node: gRPC (HTTP/2), Connect and gRPC-Web.\nexport * from "./index.js";\nexport { createConnectTransport, createGrpcTransport, createGrpcWebTransport } from "@connectrpc/connect-node";\n`,
  );
  writeFileSync(
    join(SDK, "tsconfig.json"),
    JSON.stringify(
      {
        compilerOptions: {
          target: "ES2022",
          lib: ["ES2023", "DOM"],
          module: "NodeNext",
          moduleResolution: "NodeNext",
          strict: true,
          declaration: true,
          skipLibCheck: true,
          types: [],
          rootDir: "src",
          outDir: "dist",
        },
        include: ["src"],
      },
      null,
      2,
    ),
  );
  // The project's tsc (TypeScript 7) compiles it to ESM JavaScript with declarations.
  await run(join(ROOT, "node_modules", ".bin", "tsc"), ["-p", join(SDK, "tsconfig.json")], { cwd: SDK });

  const entry = (name: string) => ({ types: `./dist/${name}.d.ts`, default: `./dist/${name}.js` });
  const sdkPackage = {
    name,
    version: pkg.version,
    description: `Typed clients of the ${pkg.name} service: messages, Connect clients for browsers and Node, OpenAPI types`,
    type: "module",
    sideEffects: false,
    exports: {
      ".": entry("index"),
      "./web": entry("web"),
      "./node": entry("node"),
      "./openapi": entry("openapi"),
      "./gen/*.js": { types: "./dist/gen/*.d.ts", default: "./dist/gen/*.js" },
      "./openapi.json": "./openapi.json",
    },
    files: ["dist", "openapi.json"],
    dependencies: {
      "@bufbuild/protobuf": version("@bufbuild/protobuf"),
      "@connectrpc/connect": version("@connectrpc/connect"),
      "@connectrpc/connect-node": version("@connectrpc/connect-node"),
      "@connectrpc/connect-web": version("@connectrpc/connect-web"),
    },
  };
  writeFileSync(join(SDK, "package.json"), `${JSON.stringify(sdkPackage, null, 2)}\n`);
  writeFileSync(
    join(SDK, "README.md"),
    `# ${sdkPackage.name}\n\nGenerated by \`make sdk\` from the protos of ${pkg.name}; do not edit. See docs/consumers.md in the service's repository.\n`,
  );
  const { stdout } = await run("npm", ["pack", "--silent"], { cwd: SDK });
  const tarball = join(SDK, stdout.trim().split("\n").pop()!);
  if (!existsSync(tarball)) throw new Error(`npm pack wrote no ${tarball}`);
  return tarball;
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? "").href) {
  const tarball = await buildSdk();
  console.log(`sdk/ written; packed ${relative(process.cwd(), tarball)}`);
}
