/**
 * The framework's public surface. Everything a service needs is exported here;
 * the folders behind it are yours to read and change.
 */
export { App, type AppOptions, type Addresses } from "./lifecycle/app.js";
export { run } from "./lifecycle/run.js";
export type { LifecycleHooks } from "./lifecycle/hooks.js";
export { defineService, type ServiceImpl, type ServiceHandlers, type UnaryHandler, type ServerStreamingHandler } from "./server/service.js";
export { CallContext, addToContext, currentContext } from "./interceptors/context.js";
export type { Interceptor, Next, Call, CallResult, MethodInfo } from "./interceptors/types.js";
export type { NamedInterceptor } from "./interceptors/chain.js";
export { Code, GrpcError, codeName } from "./errors/status.js";
export { loadConfig, ConfigError } from "./config/load.js";
export type { Config } from "./config/schema.js";
export { rootLogger } from "./logging/logger.js";
export { createClient, type Client } from "./client/client.js";
