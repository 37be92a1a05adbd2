// What `make new-rpc` writes: the RPC and its messages (into the service's proto), the handler stub (into its
// handlers) and a test of the stub. Edit these to change what it writes.
import type { HttpRule, RpcKind, RpcNames, ServiceNames } from "../names.js";

export interface RpcTemplateData {
  svc: ServiceNames;
  rpc: RpcNames;
  kind: RpcKind;
  /** undefined: gRPC only (HTTP=none). */
  http: HttpRule | undefined;
  clientStreams: boolean;
  serverStreams: boolean;
  /** The request's fields: one string per path variable. */
  fields: { name: string; number: number }[];
  /** The service's module, from the repository root: `src/service/billing-service.js`. */
  serviceModule: string;
  /** The test's request, path variables filled with "x": `{ invoiceId: "x" }`. */
  request: string;
  /** The test's HTTP path and fetch() options. */
  urlPath: string;
  fetchInit: string;
}

/** The method, indented for the service block, without a trailing newline. */
export function rpcMethod(d: RpcTemplateData): string {
  const { rpc, http } = d;
  const signature = `rpc ${rpc.name}(${d.clientStreams ? "stream " : ""}${rpc.request}) returns (${d.serverStreams ? "stream " : ""}${rpc.response})`;
  const comment = `  // ${rpc.name}: say what it does. Its handler answers UNIMPLEMENTED until written.`;
  if (!http) return `${comment}\n  ${signature};`;
  return `${comment}
  ${signature} {
    option (google.api.http) = {
      ${http.verb}: "${http.path}"
${http.body ? `      body: "*"\n` : ""}    };
  }`;
}

export function rpcMessages({ rpc, fields }: RpcTemplateData): string {
  const request =
    fields.length > 0
      ? `message ${rpc.request} {
${fields.map((f) => `  string ${f.name} = ${f.number} [(buf.validate.field).string.min_len = 1];\n`).join("")}}`
      : `message ${rpc.request} {}`;
  return `${request}

message ${rpc.response} {}
`;
}

export function rpcHandler({ rpc, kind, clientStreams, serverStreams }: RpcTemplateData): string {
  const param = clientStreams ? "_requests" : "_request";
  const head = serverStreams
    ? `// ${rpc.name} (${kind}): a stub until written; then yield each response.
// oxlint-disable-next-line require-yield -- a stub, until written
async *${rpc.local}(${param}, _ctx) {`
    : `// ${rpc.name} (${kind}): a stub until written.
async ${rpc.local}(${param}, _ctx) {`;
  return `${head}
  throw new GrpcError(Code.UNIMPLEMENTED, "${rpc.name} is not implemented yet");
}
`;
}

export function rpcTest(d: RpcTemplateData): string {
  const { svc, rpc } = d;
  const streamType = d.serverStreams ? "ClientDuplexStream" : "ClientWritableStream";
  const call = d.clientStreams
    ? `  // The typed client makes unary and server-streaming calls; a plain grpc-js client streams requests.
  const client = rawClient(${svc.service}, server.grpcAddress);
${
  d.serverStreams
    ? `  const call = client.${rpc.local}() as ClientDuplexStream<Message, Message>;`
    : `  const call = client.${rpc.local}(() => {}) as ClientWritableStream<Message>;`
}
  const status = statusOfCall(call);
  call.end();
  const err = await status;
  client.close();
`
    : `  const err = await statusOf(server.client(${svc.service}).${rpc.local}(${d.request})${d.serverStreams ? "[Symbol.asyncIterator]().next()" : ""});
`;
  const overHttp = d.http
    ? `
  const res = await fetch(\`\${server.httpUrl}${d.urlPath}\`, ${d.fetchInit});
  assert.equal(res.status, 501);
`
    : "";
  return `import assert from "node:assert/strict";
import { after, before, test } from "node:test";
${
  d.clientStreams
    ? `import type { Message } from "@bufbuild/protobuf";
import type { ${streamType} } from "@grpc/grpc-js";
`
    : ""
}import { Code } from "../src/framework/index.js";
${d.clientStreams ? `import { rawClient, statusOfCall } from "../src/framework/testing/grpc-streams.js";\n` : ""}import { startTestServer, type TestServer } from "../src/framework/testing/harness.js";
${d.clientStreams ? "" : `import { statusOf } from "../src/framework/testing/status.js";\n`}import { ${svc.service} } from "../src/gen/${svc.stem}/v1/${svc.stem}_pb.js";
import { ${svc.exportName} } from "../${d.serviceModule}";

let server: TestServer;
before(async () => {
  server = await startTestServer([${svc.exportName}]);
});
after(() => server.close());

// The stub's behaviour: replace it with the real one when you write the handler.
test("${rpc.name} answers UNIMPLEMENTED until its handler is written", async () => {
${call}  assert.deepEqual([err.code, err.details], [Code.UNIMPLEMENTED, "${rpc.name} is not implemented yet"]);
${overHttp}});
`;
}
