import assert from "node:assert/strict";
import { once } from "node:events";
import { connect, createServer, type Http2ServerRequest } from "node:http2";
import type { AddressInfo } from "node:net";
import { test } from "node:test";
import { Http2Timeouts } from "./http2-timeouts.js";

test("requests in flight whose body is in are not held by the HTTP/2 request timeout", async () => {
  const timeouts = new Http2Timeouts({ headersMs: 10_000, requestMs: 60_000 });
  // A handler that reads the whole body and never answers: every request stays in flight.
  const complete: Http2ServerRequest[] = [];
  const arrived: (() => void)[] = [];
  const server = createServer((req, res) => {
    timeouts.arrived(req, res);
    req.resume();
    req.on("end", () => {
      complete.push(req);
      arrived.shift()?.();
    });
  });
  server.listen(0, "127.0.0.1");
  await once(server, "listening");
  const session = connect(`http://127.0.0.1:${(server.address() as AddressInfo).port}`);
  try {
    // One after the other, so that each compaction finds the earlier requests with their body in.
    for (let i = 0; i < 64; i++) {
      const next = new Promise<void>((resolve) => arrived.push(resolve));
      session.request({ ":method": "POST", ":path": "/api/v1/upload", "content-type": "application/json" }).end("{}");
      await next;
    }
    assert.equal(complete.filter((req) => !req.stream.closed).length, 64, "all 64 requests are still in flight");
    // Kept until closed, it held every request: 64 here, and under load as many closed ones again.
    assert.ok(timeouts.held <= 16, `held: ${timeouts.held}`);
  } finally {
    session.destroy();
    server.close();
  }
});
