/**
 * Sum and Chat over HTTP with the real curl, in every gateway mode, exactly as the README shows them:
 * the body is NDJSON uploaded chunked from curl's standard input as it is written. A system test: it
 * needs curl, which `make test` does not (Node and npm are all it needs).
 */
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { once } from "node:events";
import { createInterface } from "node:readline";
import { after, before, describe, test } from "node:test";
import { startTestServer, type TestServer } from "../../src/framework/testing/harness.js";
import { exampleService } from "../../src/service/example-service.js";

/** curl uploading its standard input chunked, as it comes (`-T .`), printing each answer as it arrives (`-N`). */
function curl(url: string) {
  const child = spawn("curl", ["-sS", "-N", "-T", ".", "-X", "POST", "-H", "Content-Type: application/x-ndjson", url], {
    stdio: ["pipe", "pipe", "inherit"],
  });
  const lines = createInterface({ input: child.stdout })[Symbol.asyncIterator]();
  return {
    write: (text: string) => child.stdin.write(text),
    /** The next line curl printed. */
    next: async () => (await lines.next()).value as string | undefined,
    /** Ends the body (curl sends the last chunk) and resolves with curl's exit code. */
    end: async () => {
      child.stdin.end();
      const [code] = await once(child, "exit");
      return code as number;
    },
  };
}

for (const mode of ["tcp", "unix", "in-process"] as const) {
  describe(`Sum and Chat with curl and a chunked NDJSON body (gateway mode ${mode})`, () => {
    let server: TestServer;
    before(async () => {
      server = await startTestServer([exampleService], { GATEWAY_MODE: mode });
    });
    after(() => server.close());

    test("Sum: three messages in, one answer once the body ends", async () => {
      const sum = curl(`${server.httpUrl}/api/v1/sum`);
      sum.write('{"value":1}\n');
      sum.write('{"value":"2"}\n');
      sum.write('{"value":39}\n');
      const answer = sum.next();
      assert.equal(await sum.end(), 0);
      assert.deepEqual(JSON.parse((await answer)!), { sum: "42", count: 3 });
    });

    test("Chat: each line is answered before the next one is written", async () => {
      const chat = curl(`${server.httpUrl}/api/v1/chat`);
      for (const [i, text] of ["hello", "how are you", "bye"].entries()) {
        chat.write(`${JSON.stringify({ text })}\n`);
        assert.deepEqual(JSON.parse((await chat.next())!), { result: { text, seq: i + 1 } });
      }
      assert.equal(await chat.end(), 0);
      assert.equal(await chat.next(), undefined);
    });
  });
}
