/**
 * Sum and Chat over HTTP with the real curl, in every gateway mode, exactly as the README shows them:
 * the body is NDJSON uploaded chunked from curl's standard input as it is written. A system test: it
 * needs curl, which `make test` does not (Node and npm are all it needs).
 */
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { once } from "node:events";
import fs from "node:fs";
import { createInterface } from "node:readline";
import { after, before, describe, test } from "node:test";
import { fileURLToPath } from "node:url";
import { startTestServer, type TestServer } from "../../src/framework/testing/harness.js";
import { fixtureService } from "../framework/fixtures/fixture-service.js";

/**
 * docs/protocols.md's interactive Chat command, its arguments split as a shell would (single quotes only), without the URL:
 * curl uploading its standard input chunked, as it comes (`-T .`), printing each answer as it arrives (`-N`).
 */
const README_CURL = (() => {
  const readme = fs.readFileSync(fileURLToPath(new URL("../../docs/protocols.md", import.meta.url)), "utf8");
  const line = readme.split("\n").find((l) => l.startsWith("curl ") && l.includes(" -T . ") && l.endsWith("/api/v1/chat"));
  assert.ok(line, "docs/protocols.md shows the Chat command: curl … -T . … localhost:9091/api/v1/chat");
  const words = [...line.matchAll(/'([^']*)'|(\S+)/g)].map((m) => (m[1] ?? m[2]) as string);
  return words.slice(1, -1);
})();

function curl(url: string) {
  const child = spawn("curl", [...README_CURL, url], { stdio: ["pipe", "pipe", "pipe"] });
  let stderr = "";
  child.stderr.setEncoding("utf8").on("data", (chunk: string) => {
    stderr += chunk;
  });
  const lines = createInterface({ input: child.stdout })[Symbol.asyncIterator]();
  return {
    /** What curl wrote to the terminal besides the answers (its progress meter, errors): nothing, when all is well. */
    stderr: () => stderr,
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
      server = await startTestServer([fixtureService], { GATEWAY_MODE: mode });
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
      assert.equal(sum.stderr(), "");
    });

    test("Chat: each line is answered before the next one is written", async () => {
      const chat = curl(`${server.httpUrl}/api/v1/chat`);
      for (const [i, text] of ["hello", "how are you", "bye"].entries()) {
        chat.write(`${JSON.stringify({ text })}\n`);
        assert.deepEqual(JSON.parse((await chat.next())!), { result: { text, seq: i + 1 } });
      }
      assert.equal(await chat.end(), 0);
      assert.equal(await chat.next(), undefined);
      assert.equal(chat.stderr(), "", "curl printed only the answers: no progress meter between them");
    });
  });
}
