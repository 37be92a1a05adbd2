// What `make new-service` writes: the proto, the handlers and their test. Edit these to change what it writes.
import type { ServiceNames } from "../names.js";

export const serviceProto = (svc: ServiceNames) => `syntax = "proto3";

package ${svc.protoPackage};

import "buf/validate/validate.proto";
import "google/api/annotations.proto";

// ${svc.service} is served over gRPC and, through each RPC's google.api.http rule,
// as REST/JSON on the HTTP port. Add RPCs with \`make new-rpc SERVICE=${svc.kebab} NAME=...\`.
service ${svc.service} {
  // Ping answers with the message it was sent: a first RPC to replace with your own.
  rpc Ping(PingRequest) returns (PingResponse) {
    option (google.api.http) = {get: "/api/v1/${svc.kebab}/ping/{message}"};
  }
}

message PingRequest {
  string message = 1 [(buf.validate.field).string = {
    min_len: 1
    max_len: 1024
  }];
}

message PingResponse {
  string message = 1;
}
`;

export const serviceSource = (svc: ServiceNames) => `import { defineService } from "../framework/index.js";
import { ${svc.service} } from "../gen/${svc.stem}/v1/${svc.stem}_pb.js";

/**
 * ${svc.service}'s handlers, typed from the generated code (proto/${svc.protoFile}).
 * Requests arrive validated by the buf.validate rules of the proto.
 */
export const ${svc.exportName} = defineService(${svc.service}, {
  handlers: {
    async ping(request) {
      return { message: request.message };
    },
  },
});
`;

export const serviceTest = (svc: ServiceNames) => `import assert from "node:assert/strict";
import { after, before, test } from "node:test";
import { Code } from "../src/framework/index.js";
import { startTestServer, type TestServer } from "../src/framework/testing/harness.js";
import { statusOf } from "../src/framework/testing/status.js";
import { ${svc.service} } from "../src/gen/${svc.stem}/v1/${svc.stem}_pb.js";
import { ${svc.exportName} } from "../src/service/${svc.kebab}-service.js";

let server: TestServer;
before(async () => {
  server = await startTestServer([${svc.exportName}]);
});
after(() => server.close());

test("Ping answers with the message over gRPC and REST", async () => {
  assert.equal((await server.client(${svc.service}).ping({ message: "hi" })).message, "hi");
  const res = await fetch(\`\${server.httpUrl}/api/v1/${svc.kebab}/ping/hi\`);
  assert.equal(res.status, 200);
  assert.deepEqual(await res.json(), { message: "hi" });
});

test("Ping refuses an empty message: INVALID_ARGUMENT naming the field", async () => {
  const err = await statusOf(server.client(${svc.service}).ping({ message: "" }));
  assert.equal(err.code, Code.INVALID_ARGUMENT);
  assert.match(err.details, /^message: /);
});
`;
