// The generated README states the choices made at generation, in place of the template's marker block.
import type { Choices } from "./env-file.js";

const START = "<!-- create-grpc-svc:choices -->";
const END = "<!-- /create-grpc-svc:choices -->";
const BLOCK = /^[ \t]*<!-- create-grpc-svc:choices -->[ \t]*\r?\n[\s\S]*?^[ \t]*<!-- \/create-grpc-svc:choices -->[ \t]*(\r?\n|$)/m;

export function choicesMarkdown(c: Choices): string {
  const auth = {
    none: "off — set `JWT_SECRET` and/or `API_KEYS` in `.env` to turn it on",
    jwt: "JWT (HS256); the signing secret is `JWT_SECRET` in `.env`, and `make token` prints a development token",
    "api-key": "API keys in the `x-api-key` header; the key is `API_KEYS` in `.env`",
    both: "JWT (HS256) or API key (`x-api-key`); the secrets are `JWT_SECRET` and `API_KEYS` in `.env`, and `make token` prints a development token",
  }[c.auth];
  // Fail closed (src/main.ts): a clone whose .env was not copied must not serve without authentication.
  const required =
    c.auth === "none" ? "" : "; `AUTH_REQUIRED` is true (`src/main.ts`), so without the secret the service refuses to start";
  const admin =
    c.adminPort === undefined
      ? "none — `/metrics`, `/swagger/` and `/debug/pprof/` are on the HTTP port (9091)"
      : `${c.adminPort} (\`ADMIN_PORT\`) — \`/metrics\`, \`/swagger/\` and \`/debug/pprof/\` are served there`;
  const gateway = c.unixSocket
    ? "Unix socket to the gRPC server (`DISABLE_UNIX_GATEWAY=false`)"
    : "TCP loopback to the gRPC server";
  const sse = c.sse
    ? "on — server-streaming routes answer `Accept: text/event-stream` with server-sent events"
    : "off (`DISABLE_SSE_MARSHALER=true`) — streams are newline-delimited JSON";
  return [
    "Generated with these settings:",
    "",
    `- **Auth:** ${auth}${required}`,
    `- **Admin port:** ${admin}`,
    `- **Gateway:** ${gateway}`,
    `- **Server-sent events:** ${sse}`,
    "",
    "All of these are environment variables (`.env.example` lists them), so they can be changed later.",
    "",
  ].join("\n");
}

/** Replaces the marker block (markers included); a README without it is returned unchanged. */
export function replaceChoicesBlock(readme: string, c: Choices): string {
  if (!BLOCK.test(readme)) {
    // A lone marker would be a template bug; never let one reach a generated repo.
    return readme.includes(START) || readme.includes(END)
      ? readme.replace(/^[ \t]*<!-- \/?create-grpc-svc:choices -->[ \t]*\r?\n?/gm, "")
      : readme;
  }
  return readme.replace(BLOCK, () => choicesMarkdown(c));
}
