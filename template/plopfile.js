// The repository's generators: `npx plop` asks, `make new-service|new-rpc|new-interceptor|new-worker` does not.
// They are TypeScript (plop/generators.ts), loaded through tsx so no build step comes first.
import { progressSpinner } from "plop";
import { register } from "tsx/esm/api";

// plop's spinner prints a bare "- " line for every step when stderr is not a terminal (make in CI, a pipe), and
// plop 4.0.5 ignores --no-progress (its argument parser does not read negated flags): keep it still there.
if (!process.stderr.isTTY) progressSpinner.start = () => progressSpinner;

register();
const { default: generators } = await import("./plop/generators.ts");

export default generators;
