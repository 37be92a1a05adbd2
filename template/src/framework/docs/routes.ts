import { createHash } from "node:crypto";
import { readFileSync } from "node:fs";
import { createRequire } from "node:module";
import { dirname, join } from "node:path";
import type { FastifyInstance, FastifyReply, FastifyRequest } from "fastify";
import { authRule } from "../auth/rules.js";
import type { ServedService } from "../call/handlers.js";
import { Code, GrpcError } from "../call/status.js";
import type { Config } from "../config/schema.js";
import { sendHttpError } from "../errors/http.js";
import type { GatewayRoute } from "../gateway/routes.js";
import { readPackageJson } from "../health/build-info.js";
import { buildOpenApi, documentStem, type OpenApiDocument, type OpenApiOptions } from "./openapi.js";
import { buildOpenApi31, type OpenApi31Document } from "./openapi31.js";

/**
 * The only files of swagger-ui-dist served, by name. A request names a key of this table and
 * nothing else: no path is ever built from the URL, so `..` or encoded slashes cannot reach any
 * other file.
 */
const UI_FILES = new Map<string, string>([
  ["index.css", "text/css; charset=utf-8"],
  ["swagger-ui.css", "text/css; charset=utf-8"],
  ["swagger-ui-bundle.js", "text/javascript; charset=utf-8"],
  ["swagger-ui-standalone-preset.js", "text/javascript; charset=utf-8"],
  ["favicon-16x16.png", "image/png"],
  ["favicon-32x32.png", "image/png"],
  ["oauth2-redirect.html", "text/html; charset=utf-8"],
  ["oauth2-redirect.js", "text/javascript; charset=utf-8"],
]);

/** Everything the UI needs comes from this server; only "Try it out" calls may go to the API's host. */
const CSP =
  "default-src 'none'; script-src 'self'; style-src 'self' 'unsafe-inline'; img-src 'self' data:; font-src 'self' data:; " +
  "connect-src 'self' http: https:; frame-ancestors 'self'; base-uri 'none'; form-action 'none'";

interface Asset {
  body: Buffer;
  type: string;
  etag: string;
}

export interface SwaggerContext {
  config: Config;
  /** The HTTP port once it listens (HTTP_PORT may be 0: a free port). */
  httpPort?: () => number | undefined;
  services: readonly ServedService[];
  routes: readonly GatewayRoute[];
}

function asset(body: Buffer | string, type: string): Asset {
  const buf = typeof body === "string" ? Buffer.from(body) : body;
  return { body: buf, type, etag: `"${createHash("sha1").update(buf).digest("base64url")}"` };
}

function send(req: FastifyRequest, reply: FastifyReply, a: Asset, extra: Record<string, string> = {}) {
  reply.header("etag", a.etag).header("cache-control", "no-cache").header("x-content-type-options", "nosniff").headers(extra);
  if (req.headers["if-none-match"] === a.etag) return reply.code(304).send();
  return reply.type(a.type).send(a.body);
}

function escapeHtml(text: string): string {
  return text.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);
}

/**
 * `/swagger/` (Swagger UI from the installed swagger-ui-dist, offline), `/swagger/<stem>.swagger.json`
 * (the OpenAPI document of the gateway routes) and `/swagger` → `/swagger/`. Nothing is read or built
 * until the first request, so start-up pays nothing.
 */
export function registerSwagger(app: FastifyInstance, { config, services, routes, httpPort }: SwaggerContext): void {
  const descs = services.map((s) => s.desc);
  const overridden = new Set(
    services.filter((s) => typeof (s as { authorize?: unknown }).authorize === "function").map((s) => s.desc.typeName),
  );
  const stem = documentStem(descs);
  const docName = `${stem}.swagger.json`;
  const title = () => config.APP_NAME || readPackageJson().name || stem;
  let dir: string | undefined;
  let doc: OpenApiDocument | undefined;
  let docAsset: Asset | undefined;
  let doc31: OpenApi31Document | undefined;
  let doc31Asset: Asset | undefined;
  const doc31Name = `${stem}.openapi.json`;
  const cache = new Map<string, Asset>();

  const uiDir = () => (dir ??= dirname(createRequire(import.meta.url).resolve("swagger-ui-dist/package.json")));
  const options = (): OpenApiOptions => ({
    title: title(),
    version: readPackageJson().version ?? "",
    services: descs,
    jwt: config.JWT_SECRET !== undefined || config.JWT_JWKS_URL !== undefined || config.JWT_OIDC_ISSUER !== undefined,
    // A service's `authorize` override decides alone: its methods' proto rules do not apply.
    rules: (method) => (overridden.has(method.parent.typeName) ? undefined : authRule(method)),
    apiKey: config.API_KEYS.length > 0,
    apiKeyForwarded: config.HTTP_HEADER_PREFIXES.some((p) => p !== "" && "x-api-key".startsWith(p.toLowerCase())),
    sse: !config.DISABLE_SSE_MARSHALER,
  });
  const document = () => (doc ??= buildOpenApi(routes, options()));
  const document31 = () => (doc31 ??= buildOpenApi31(routes, { ...options(), oidcIssuer: config.JWT_OIDC_ISSUER }));

  const index = () => {
    let a = cache.get("index.html");
    if (!a) {
      const html = readFileSync(join(uiDir(), "index.html"), "utf8").replace(
        /<title>[^<]*<\/title>/,
        `<title>${escapeHtml(title())} API · Swagger UI</title>`,
      );
      cache.set("index.html", (a = asset(html, "text/html; charset=utf-8")));
    }
    return a;
  };
  const initializer = () => {
    let a = cache.get("swagger-initializer.js");
    if (!a) cache.set("swagger-initializer.js", (a = asset(initializerScript(stem), "text/javascript; charset=utf-8")));
    return a;
  };
  const documentFor = (req: FastifyRequest) => {
    const host = apiHost(req, config, httpPort?.() ?? config.HTTP_PORT);
    if (host) return asset(JSON.stringify({ ...document(), host }), "application/json");
    return (docAsset ??= asset(JSON.stringify(document()), "application/json"));
  };
  const document31For = (req: FastifyRequest) => {
    const host = apiHost(req, config, httpPort?.() ?? config.HTTP_PORT);
    if (host) return asset(JSON.stringify({ ...document31(), servers: [{ url: `${req.protocol}://${host}` }] }), "application/json");
    return (doc31Asset ??= asset(JSON.stringify(document31()), "application/json"));
  };
  const uiFile = (name: string) => {
    const type = UI_FILES.get(name);
    if (!type) return undefined;
    let a = cache.get(name);
    if (!a) cache.set(name, (a = asset(readFileSync(join(uiDir(), name)), type)));
    return a;
  };

  // Three routes (fastify routes cost start-up time): the redirect, one lookup by file name, the 3.1 document.
  app.get("/swagger", (_req, reply) => reply.redirect("swagger/", 301));
  app.get("/swagger/*", (req, reply) => {
    const name = (req.params as { "*": string })["*"];
    if (name === "" || name === "index.html") return send(req, reply, index(), { "content-security-policy": CSP });
    if (name === "swagger-initializer.js") return send(req, reply, initializer());
    if (name === docName) return send(req, reply, documentFor(req));
    const file = uiFile(name);
    return file ? send(req, reply, file) : sendHttpError(reply, new GrpcError(Code.NOT_FOUND, "Not Found"));
  });
  app.get(`/openapi/${doc31Name}`, (req, reply) => send(req, reply, document31For(req)));
}

function initializerScript(stem: string): string {
  // The 3.1 document first (swagger-ui-dist 5 renders 3.1); the 2.0 one stays a choice in the top bar.
  const urls = [
    { url: `../openapi/${stem}.openapi.json`, name: "OpenAPI 3.1" },
    { url: `./${stem}.swagger.json`, name: "OpenAPI 2.0" },
  ];
  return `window.onload = function () {
  window.ui = SwaggerUIBundle({
    urls: ${JSON.stringify(urls)},
    dom_id: "#swagger-ui",
    deepLinking: true,
    validatorUrl: null,
    presets: [SwaggerUIBundle.presets.apis, SwaggerUIStandalonePreset],
    plugins: [SwaggerUIBundle.plugins.DownloadUrl],
    layout: "StandaloneLayout",
    // The 2.0 document's BearerAuth is an API key in Authorization (OpenAPI 2.0 has no bearer scheme): the bare token
    // pasted into Authorize goes out with the Bearer prefix; a value that has it already is left as it is.
    requestInterceptor: function (req) {
      var auth = req.headers && req.headers.Authorization;
      if (auth && !/^bearer /i.test(auth)) req.headers.Authorization = "Bearer " + auth;
      return req;
    },
  });
};
`;
}

const HOSTNAME = /^(?:[A-Za-z0-9-]+(?:\.[A-Za-z0-9-]+)*|\[[0-9A-Fa-f:.]+\])$/;

/**
 * With ADMIN_PORT the document is served from the admin port, but the API is on the HTTP port:
 * the document then names that port (on the host the browser used), so "Try it out" and the curl
 * lines point at the API (CORS lets the admin port's origin call it). Never from a malformed Host.
 */
function apiHost(req: FastifyRequest, config: Config, httpPort: number): string | undefined {
  if (config.ADMIN_PORT === undefined || httpPort === 0) return undefined;
  const hostname = req.hostname;
  return HOSTNAME.test(hostname) ? `${hostname}:${httpPort}` : undefined;
}
