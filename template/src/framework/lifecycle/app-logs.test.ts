import assert from "node:assert/strict";
import { test } from "node:test";
import { experimental, logVerbosity } from "@grpc/grpc-js";
import { loadConfig } from "../config/load.js";
import { App } from "./app.js";

test("grpc-js's lines go through the service's logger as soon as the app exists, before any server is made", () => {
  const lines: Record<string, unknown>[] = [];
  new App({
    services: [],
    config: loadConfig({ LOG_LEVEL: "info" }),
    logDestination: { write: (line: string) => void lines.push(JSON.parse(line) as Record<string, unknown>) },
  });
  // What a grpc-js client made in a preStart hook writes (errors are on at grpc-js's default verbosity).
  experimental.log(logVerbosity.ERROR, "a client's connection failed");
  assert.deepEqual(
    lines.filter((l) => l.component === "grpc-js").map((l) => [l.level, l.msg]),
    [["error", "a client's connection failed"]],
  );
});
