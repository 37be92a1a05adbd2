/**
 * The framework's layers, checked by `make lint` (dependency-cruiser). Bottom to top:
 *   1. call/                                      the call model: imports no other framework folder
 *   2. config/ logging/ tracing/ errors/ metrics/ codec/ overload/  cross-cutting helpers: the call model and each other
 *   3. interceptors/ auth/                         functions over the call model
 *   4. server/ gateway/ browser/ health/ client/ docs/ profiling/ admin/ workers/   transports and routes
 *   5. lifecycle/ testing/ index.ts               the composition root: assembles the rest, nothing imports it
 * A folder imports only from folders below it, or beside it in layer 4 (gateway uses server; browser uses
 * gateway; admin mounts docs, metrics and profiling), and no two folders ever import each other, however
 * indirectly: a cycle between folders fails even when no file imports itself round the loop.
 */
const FW = "^src/framework/";
const HELPERS = `${FW}(config|logging|tracing|errors|metrics|codec|overload)/`;
const ABOVE_HELPERS = `${FW}(interceptors|auth|server|gateway|browser|admin|docs|health|profiling|client|workers|lifecycle|testing)/`;
const TRANSPORTS = `${FW}(server|gateway|browser|admin|docs|health|profiling|client)/`;
const ROOT = `${FW}(lifecycle|testing)/|${FW}index\\.ts$`;

module.exports = {
  forbidden: [
    {
      name: "call-model-imports-no-framework-folder",
      comment: "call/ is the bottom layer: it may import only itself and packages.",
      severity: "error",
      from: { path: `${FW}call/` },
      to: { path: FW, pathNot: `${FW}call/` },
    },
    {
      name: "helpers-import-only-the-call-model",
      comment: "config, logging, tracing, errors, metrics and codec are helpers (layer 2): they import the call model and each other only.",
      severity: "error",
      from: { path: HELPERS },
      to: { path: ABOVE_HELPERS },
    },
    {
      name: "interceptors-and-auth-below-the-transports",
      comment: "Interceptors and auth (layer 3) are functions over the call model; transports and the composition root use them, not the reverse.",
      severity: "error",
      from: { path: `${FW}(interceptors|auth)/` },
      to: { path: `${TRANSPORTS}|${ROOT}` },
    },
    {
      name: "only-the-root-assembles",
      comment: "Nothing imports the composition root (lifecycle/, testing/, index.ts) but the root itself.",
      severity: "error",
      from: { path: FW, pathNot: ROOT },
      to: { path: ROOT },
    },
    {
      name: "no-cycle-between-framework-folders",
      comment:
        "Two framework folders that import each other, directly or through others, are one concern in two places: move the shared piece down a layer.",
      severity: "error",
      scope: "folder",
      from: { path: `${FW}[^/]+` },
      to: { circular: true },
    },
  ],
  options: {
    // swc parses TypeScript here (TypeScript 7's package has no compiler API for dependency-cruiser to use).
    parser: "swc",
    doNotFollow: { path: "node_modules" },
    exclude: { path: ["^src/gen/", "\\.test\\.ts$"] },
    enhancedResolveOptions: { extensions: [".ts", ".js"], exportsFields: ["exports"], conditionNames: ["import", "require", "node", "default"] },
  },
};
