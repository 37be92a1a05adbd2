/**
 * The framework's public surface. Everything a service needs is exported here;
 * the folders behind it are yours to read and change.
 */

export { type Authenticate, unauthenticated } from "./auth/auth.js";
export { type Claims, claimsOf, requireClaims } from "./auth/claims.js";
export { type TokenVerifier, verifyOptions } from "./auth/jwt.js";
export { type Client, createClient } from "./client/client.js";
export { ConfigError, loadConfig } from "./config/load.js";
export type { Config } from "./config/schema.js";
export { Code, codeName, GrpcError } from "./errors/status.js";
export type { NamedInterceptor } from "./interceptors/chain.js";
export { addToContext, CallContext, currentContext } from "./interceptors/context.js";
export type { Call, CallResult, Interceptor, MethodInfo, Next } from "./interceptors/types.js";
export { type Addresses, App, type AppOptions } from "./lifecycle/app.js";
export type { LifecycleHooks } from "./lifecycle/hooks.js";
export { run } from "./lifecycle/run.js";
export { rootLogger } from "./logging/logger.js";
export { defineService, type ServerStreamingHandler, type ServiceHandlers, type ServiceImpl, type UnaryHandler } from "./server/service.js";
export { type BackoffOptions, type EveryOptions, every, type Worker } from "./workers/worker.js";
