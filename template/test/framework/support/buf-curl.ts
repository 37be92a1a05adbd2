/** The framework tests' `buf curl`. */
import { execFile } from "node:child_process";
import { promisify } from "node:util";

const run = promisify(execFile);

/** The real `buf curl` over gRPC (h2c), which knows nothing of our protos: everything it learns comes from reflection. Resolves to its stdout. */
export async function bufCurl(...args: string[]): Promise<string> {
  const { stdout } = await run("node_modules/.bin/buf", ["curl", "--protocol", "grpc", "--http2-prior-knowledge", ...args]);
  return stdout;
}
