/**
 * One call over each of the six ways into a service (gRPC, REST, gRPC-Web, Connect, WebSocket, SSE) with the same
 * credentials, each reduced to a verdict, for auth tests that must hold on every protocol.
 */
import type { DescService } from "@bufbuild/protobuf";
import { Code as ConnectCode, ConnectError, createClient } from "@connectrpc/connect";
import { createConnectTransport, createGrpcTransport, createGrpcWebTransport } from "@connectrpc/connect-node";
import { WS_PROTOCOL } from "../../../src/framework/browser/websocket.js";
import type { TestServer } from "../../../src/framework/testing/harness.js";
import { FixtureService } from "../../gen/fixture/v1/fixture_pb.js";

export const PROTOCOLS = ["grpc", "rest", "grpc-web", "connect", "websocket", "sse"] as const;
export type Protocol = (typeof PROTOCOLS)[number];
export type Verdict = "ok" | "unauthenticated" | "permission_denied" | `other: ${string}`;

/** What to call: a unary method (gRPC, gRPC-Web, Connect) and REST route, and a server-streaming method (WebSocket, SSE). */
export interface Target {
  service: DescService;
  /** The unary method's local name (`echo`) and request. */
  unary: { method: string; request: Record<string, unknown> };
  /** The unary method's REST route. */
  rest: { method: "GET" | "POST"; path: string; body?: unknown };
  /** The server-streaming method's gRPC path (WebSocket) and REST path (SSE, GET). */
  stream: { grpcPath: string; request: Record<string, unknown>; ssePath: string };
}

/** FixtureService: Echo (unary) and Countdown (server streaming). */
export const FIXTURE: Target = {
  service: FixtureService,
  unary: { method: "echo", request: { message: "hi" } },
  rest: { method: "POST", path: "/api/v1/echo", body: { message: "hi" } },
  stream: { grpcPath: "/fixture.v1.FixtureService/Countdown", request: { from: 1 }, ssePath: "/api/v1/countdown/1" },
};

const byHttpStatus = (status: number): Verdict =>
  status === 200 ? "ok" : status === 401 ? "unauthenticated" : status === 403 ? "permission_denied" : `other: HTTP ${status}`;

function byConnectError(err: unknown): Verdict {
  const code = ConnectError.from(err).code;
  return code === ConnectCode.Unauthenticated
    ? "unauthenticated"
    : code === ConnectCode.PermissionDenied
      ? "permission_denied"
      : `other: ${ConnectCode[code]}`;
}

/** The Sec-WebSocket-Protocol entries that carry these headers' credentials (`bearer.…`, `api-key.…`). */
function wsProtocols(headers: Record<string, string>): string[] {
  const protocols = [WS_PROTOCOL];
  const bearer = /^Bearer (.+)$/i.exec(headers.authorization ?? "")?.[1];
  if (bearer !== undefined) protocols.push(`bearer.${Buffer.from(bearer).toString("base64url")}`);
  if (headers["x-api-key"] !== undefined) protocols.push(`api-key.${Buffer.from(headers["x-api-key"]).toString("base64url")}`);
  return protocols;
}

function websocket(url: string, protocols: string[], send: string): Promise<Verdict> {
  return new Promise((resolve, reject) => {
    const ws = new WebSocket(url, protocols);
    const frames: { result?: unknown; end?: unknown; error?: { code: number } }[] = [];
    ws.onopen = () => ws.send(send);
    ws.onmessage = (e) => frames.push(JSON.parse(String(e.data)));
    ws.onclose = () => {
      const error = frames.find((f) => f.error)?.error;
      if (!error) resolve(frames.some((f) => f.end) ? "ok" : "other: no end frame");
      else resolve(error.code === 16 ? "unauthenticated" : error.code === 7 ? "permission_denied" : `other: code ${error.code}`);
    };
    ws.onerror = () => reject(new Error("websocket failed"));
  });
}

/** One call over `protocol` with `headers` (Authorization, x-api-key), reduced to its verdict. */
export async function callOver(
  server: TestServer,
  protocol: Protocol,
  headers: Record<string, string>,
  target = FIXTURE,
): Promise<Verdict> {
  switch (protocol) {
    case "grpc":
    case "grpc-web":
    case "connect": {
      const baseUrl = protocol === "grpc" ? `http://${server.grpcAddress}` : server.httpUrl;
      const transport =
        protocol === "grpc"
          ? createGrpcTransport({ baseUrl })
          : protocol === "grpc-web"
            ? createGrpcWebTransport({ baseUrl, httpVersion: "1.1" })
            : createConnectTransport({ baseUrl, httpVersion: "1.1" });
      const client = createClient(target.service, transport) as unknown as Record<
        string,
        (req: unknown, opts: { headers: Record<string, string> }) => Promise<unknown>
      >;
      try {
        await client[target.unary.method]!(target.unary.request, { headers });
        return "ok";
      } catch (err) {
        return byConnectError(err);
      }
    }
    case "rest": {
      const { method, path, body } = target.rest;
      const res = await fetch(`${server.httpUrl}${path}`, {
        method,
        headers: { "content-type": "application/json", ...headers },
        body: body === undefined ? undefined : JSON.stringify(body),
      });
      await res.arrayBuffer();
      return byHttpStatus(res.status);
    }
    case "sse": {
      const res = await fetch(`${server.httpUrl}${target.stream.ssePath}`, { headers: { accept: "text/event-stream", ...headers } });
      const text = await res.text();
      if (res.status === 200 && /"code"/.test(text)) return `other: SSE error event ${text.slice(0, 120)}`;
      return byHttpStatus(res.status);
    }
    case "websocket":
      return websocket(
        `${server.httpUrl.replace(/^http/, "ws")}${target.stream.grpcPath}`,
        wsProtocols(headers),
        JSON.stringify(target.stream.request),
      );
  }
}

/** The verdict of one call over each protocol, by protocol. */
export async function callEveryProtocol(
  server: TestServer,
  headers: Record<string, string>,
  target = FIXTURE,
): Promise<Record<Protocol, Verdict>> {
  const verdicts = {} as Record<Protocol, Verdict>;
  for (const protocol of PROTOCOLS) verdicts[protocol] = await callOver(server, protocol, headers, target);
  return verdicts;
}

/** `{ grpc: verdict, rest: verdict, … }` with one verdict for every protocol, for deepEqual. */
export function everywhere(verdict: Verdict): Record<Protocol, Verdict> {
  return Object.fromEntries(PROTOCOLS.map((p) => [p, verdict])) as Record<Protocol, Verdict>;
}
