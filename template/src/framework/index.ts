/**
 * The framework's public surface. Everything a service needs is exported here;
 * the folders behind it are yours to read and change.
 */

export { type Authenticate, unauthenticated } from "./auth/auth.js";
export { type Claims, claimsOf, requireClaims } from "./auth/claims.js";
export { type TokenVerifier, verifyOptions } from "./auth/jwt.js";
/** The WebSocket subprotocol a browser offers to call a streaming method (see docs/browsers.md). */
export { WS_PROTOCOL } from "./browser/websocket.js";
export type { NamedInterceptor } from "./call/chain.js";
export { addToContext, CallContext, currentContext } from "./call/context.js";
export type {
  BidiStreamingHandler,
  ClientStreamingHandler,
  ServerStreamingHandler,
  ServiceHandlers,
  UnaryHandler,
} from "./call/handlers.js";
export type { PeerIdentity } from "./call/peer.js";
export { RequestStream } from "./call/request-stream.js";
export { ResponseStream } from "./call/response-stream.js";
export { Code, codeName, GrpcError } from "./call/status.js";
export type { Call, CallResult, Interceptor, MethodInfo, Next } from "./call/types.js";
export type { BreakerOptions } from "./client/adaptive-throttle.js";
export { type CallOptions, type Client, type ClientOptions, createClient } from "./client/client.js";
export type { HedgingPolicy, MethodPolicy, RetryBudget, RetryPolicy } from "./client/policy.js";
export { ConfigError, loadConfig } from "./config/load.js";
export type { Config } from "./config/schema.js";
export { type Addresses, App, type AppOptions } from "./lifecycle/app.js";
export type { LifecycleHooks } from "./lifecycle/hooks.js";
export { type RunOptions, run } from "./lifecycle/run.js";
export { defineService, type ServiceImpl } from "./lifecycle/service.js";
export { rootLogger } from "./logging/logger.js";
export { type BackoffOptions, type EveryOptions, every, type Worker } from "./workers/worker.js";
