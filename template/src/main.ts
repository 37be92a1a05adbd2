import { run } from "./framework/index.js";
import { exampleService } from "./service/example-service.js";

// Reads the configuration from the environment, serves gRPC and HTTP, and stops gracefully on SIGTERM.
await run([exampleService]);
