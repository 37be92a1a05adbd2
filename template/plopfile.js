// The repository's generators: `npx plop` asks, `make new-service|new-rpc|new-interceptor|new-worker` does not.
// They are TypeScript (plop/generators.ts), loaded through tsx so no build step comes first.
import { register } from "tsx/esm/api";

register();
const { default: generators } = await import("./plop/generators.ts");

export default generators;
