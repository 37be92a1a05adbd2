import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { reportError, StepError, UsageError } from "../../generator/errors.js";

function report(err: unknown): { code: number; text: string } {
  let text = "";
  const code = reportError(err, (s) => {
    text += s;
  });
  return { code, text };
}

describe("error reporting", () => {
  it("maps Ctrl-C in a prompt (ExitPromptError) to one 'cancelled' line and exit 130, no stack", () => {
    // The shape @inquirer/core throws: an Error whose name is ExitPromptError.
    const err = Object.assign(new Error("User force closed the prompt with SIGINT"), { name: "ExitPromptError" });
    assert.deepEqual(report(err), { code: 130, text: "create-grpc-svc: cancelled\n" });
  });

  it("maps a usage error to exactly one prefixed line and exit 2", () => {
    assert.deepEqual(report(new UsageError("bad name\nsecond line")), { code: 2, text: "create-grpc-svc: bad name\n" });
  });

  it("names the failed step and the command to finish, exit 1", () => {
    const { code, text } = report(new StepError("npm install", "cd ./x && npm install --no-audit --no-fund", "exit code 1"));
    assert.equal(code, 1);
    assert.match(text, /^create-grpc-svc: npm install failed \(exit code 1\)\. The generated files are kept/);
    assert.match(text, /\n {2}cd \.\/x && npm install --no-audit --no-fund\n$/);
  });

  it("reports any other error as one line, exit 1", () => {
    assert.deepEqual(report(new Error("boom")), { code: 1, text: "create-grpc-svc: boom\n" });
  });
});
