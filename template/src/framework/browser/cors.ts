import type { FastifyInstance, FastifyReply, FastifyRequest } from "fastify";
import type { Config } from "../config/schema.js";

/**
 * Request headers a browser may send cross-origin, beyond the CORS-safelisted ones: those the
 * gateway, gRPC-Web and Connect read. The trace and debug headers are added from the config.
 */
const ALLOWED_HEADERS = [
  "content-type",
  "authorization",
  "x-api-key",
  "connect-protocol-version",
  "connect-timeout-ms",
  "x-grpc-web",
  "x-user-agent",
  "grpc-timeout",
];

/**
 * Response headers a page may read: status and errors of gRPC-Web, tracing, rate limit and auth; CORS_EXPOSED_HEADERS
 * adds the service's own (custom response metadata, Connect unary trailers as `trailer-<name>`).
 */
const EXPOSED_HEADERS = ["grpc-status", "grpc-message", "grpc-status-details-bin", "retry-after", "www-authenticate"];

export interface CorsSettings {
  /** Allowed origins (`scheme://host[:port]`), or `["*"]` for any; empty for none. */
  readonly origins: readonly string[];
  readonly credentials: boolean;
  readonly maxAgeSeconds: number;
  /** CORS_EXPOSED_HEADERS: exposed beside the defaults. */
  readonly exposedHeaders: readonly string[];
  readonly traceHeader: string;
  readonly debugHeader: string;
  /** ADMIN_PORT is set: Swagger UI served there calls this port. */
  readonly admin: boolean;
}

export function corsSettings(config: Config): CorsSettings {
  return {
    origins: config.CORS_ALLOWED_ORIGINS,
    credentials: config.CORS_ALLOW_CREDENTIALS,
    maxAgeSeconds: config.CORS_MAX_AGE_SECONDS,
    exposedHeaders: config.CORS_EXPOSED_HEADERS,
    traceHeader: config.TRACE_HEADER_NAME,
    debugHeader: config.DEBUG_LOG_HEADER_NAME,
    admin: config.ADMIN_PORT !== undefined,
  };
}

/**
 * Which browser origins may call the HTTP port: the configured ones, and, once the admin server is
 * listening, the admin port on the host the request was sent to (Swagger UI served there runs
 * "Try it out" against this port). Used by the CORS hook and by the WebSocket upgrade's Origin check.
 */
export class CorsPolicy {
  readonly settings: CorsSettings;
  readonly #any: boolean;
  readonly #origins: ReadonlySet<string>;
  /** Set by the app once the admin server has a port. */
  adminPort: number | undefined;
  readonly allowHeaders: string;
  readonly exposeHeaders: string;
  readonly maxAge: string;

  constructor(settings: CorsSettings) {
    this.settings = settings;
    this.#any = settings.origins.includes("*");
    this.#origins = new Set(settings.origins);
    this.allowHeaders = [...new Set([...ALLOWED_HEADERS, settings.traceHeader, settings.debugHeader])].join(", ");
    this.exposeHeaders = [...new Set([...EXPOSED_HEADERS, settings.traceHeader, ...settings.exposedHeaders])].join(", ");
    this.maxAge = String(settings.maxAgeSeconds);
  }

  /** Whether any origin can be allowed at all: nothing is installed otherwise. */
  get enabled(): boolean {
    return this.#origins.size > 0 || this.settings.admin;
  }

  /** `*` answers any origin (never with credentials: the config refuses that pair). */
  get wildcard(): boolean {
    return this.#any;
  }

  /** Whether a page of `origin` may call this server, reached under the Host header `host`. */
  allows(origin: string, host: string | undefined): boolean {
    if (this.#any || this.#origins.has(origin)) return true;
    return this.adminPort !== undefined && host !== undefined && isAdminOrigin(origin, host, this.adminPort);
  }

  /**
   * The CORS headers registerCors gives a response (not a preflight) to a request from `origin`, for answers
   * written before fastify runs (a call refused when overloaded); undefined when there are none to give.
   */
  headersFor(origin: string | undefined, host: string | undefined): Record<string, string> | undefined {
    if (!this.enabled) return undefined;
    const vary: Record<string, string> = this.#any ? {} : { vary: "Origin" };
    if (origin === undefined || !this.allows(origin, host)) return vary;
    const headers: Record<string, string> = { ...vary, "access-control-allow-origin": this.#any ? "*" : origin };
    if (this.settings.credentials) headers["access-control-allow-credentials"] = "true";
    headers["access-control-expose-headers"] = this.exposeHeaders;
    return headers;
  }
}

/** `http(s)://<the request's host name>:<admin port>`: the service's own admin server. */
function isAdminOrigin(origin: string, host: string, adminPort: number): boolean {
  const colon = host.lastIndexOf(":");
  const hostname = colon > host.lastIndexOf("]") ? host.slice(0, colon) : host;
  return origin === `http://${hostname}:${adminPort}` || origin === `https://${hostname}:${adminPort}`;
}

/**
 * CORS for every route of the HTTP server. Hand-written rather than @fastify/cors: that plugin adds a
 * catch-all OPTIONS route, which the gateway's own catch-all already serves; its preflight lists one
 * fixed set of methods where ours lists those of the matched route (`methodsAt`); and the WebSocket
 * upgrade must apply the same origin decision. A request without `Origin` costs one header lookup.
 *
 * An allowed origin gets `Access-Control-Allow-Origin` (itself, or `*`), `-Allow-Credentials` when
 * configured and `-Expose-Headers`; a preflight (`OPTIONS` with `Access-Control-Request-Method`) to a
 * served path is answered 204 with the path's methods, the allowed headers and `-Max-Age`. An origin
 * not allowed gets no CORS header at all, and its preflight goes on to the routes like any OPTIONS.
 */
export function registerCors(app: FastifyInstance, policy: CorsPolicy, methodsAt: (path: string) => readonly string[]): void {
  const { credentials } = policy.settings;
  const onRequest = (req: FastifyRequest, reply: FastifyReply, done: () => void): void => {
    const origin = req.headers.origin;
    // The answer depends on Origin unless it is `*`: caches must not serve one origin's answer to another.
    if (!policy.wildcard) reply.header("vary", "Origin");
    // HTTP/2 requests name their host in :authority.
    if (origin === undefined || !policy.allows(origin, req.headers.host ?? (req.headers[":authority"] as string | undefined))) {
      done();
      return;
    }
    reply.header("access-control-allow-origin", policy.wildcard ? "*" : origin);
    if (credentials) reply.header("access-control-allow-credentials", "true");
    if (req.method === "OPTIONS" && req.headers["access-control-request-method"] !== undefined) {
      const q = req.url.indexOf("?");
      const methods = methodsAt(q === -1 ? req.url : req.url.slice(0, q));
      if (methods.length > 0) {
        reply
          .code(204)
          .header("access-control-allow-methods", methods.join(", "))
          .header("access-control-allow-headers", policy.allowHeaders)
          .header("access-control-max-age", policy.maxAge)
          .header("content-length", "0")
          .send();
        return;
      }
    }
    reply.header("access-control-expose-headers", policy.exposeHeaders);
    done();
  };
  app.addHook("onRequest", onRequest);
}
