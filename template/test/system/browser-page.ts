/**
 * The script of the cross-origin test page (browser-protocols.test.ts), bundled for the browser by
 * esbuild: Connect and gRPC-Web clients from @connectrpc/connect-web, typed from the service's own
 * generated code, plus EventSource and WebSocket, each exposed to the test as a window function.
 */
import { createClient } from "@connectrpc/connect";
import { createConnectTransport, createGrpcWebTransport } from "@connectrpc/connect-web";
import { FixtureService } from "../gen/fixture/v1/fixture_pb.js";

/** The little of the DOM this page touches (the project's TypeScript config has Node's types, not the DOM's). */
declare const document: {
  createElement(tag: "li"): { textContent: string };
  getElementById(id: string): { append(node: unknown): void } | null;
};

/** What the test calls in the page, as `globalThis.api`. */
export type PageApi = typeof api;

function log(line: string): void {
  const li = document.createElement("li");
  li.textContent = line;
  document.getElementById("log")!.append(li);
}

const api = {
  /** Echo through the Connect protocol (JSON), or through gRPC-Web (binary). */
  async echo(baseUrl: string, protocol: "connect" | "grpc-web", message: string): Promise<{ message: string; traceId: string }> {
    const transport = protocol === "connect" ? createConnectTransport({ baseUrl }) : createGrpcWebTransport({ baseUrl });
    const res = await createClient(FixtureService, transport).echo({ message });
    log(`${protocol} Echo → ${res.message} (trace ${res.traceId})`);
    return { message: res.message, traceId: res.traceId };
  },

  /** Echo through Connect, reading response header `header` and trailer `trailer` (null when the browser hides them). */
  async echoMetadata(baseUrl: string, header: string, trailer: string): Promise<{ header: string | null; trailer: string | null }> {
    let headerValue: string | null = null;
    let trailerValue: string | null = null;
    await createClient(FixtureService, createConnectTransport({ baseUrl })).echo(
      { message: "metadata" },
      { onHeader: (h) => (headerValue = h.get(header)), onTrailer: (t) => (trailerValue = t.get(trailer)) },
    );
    log(`Connect Echo → header ${header}: ${headerValue}, trailer ${trailer}: ${trailerValue}`);
    return { header: headerValue, trailer: trailerValue };
  },

  /** Countdown read by EventSource: every message, until `event: end` or the end of the connection. */
  eventSource(url: string): Promise<number[]> {
    return new Promise((resolve) => {
      const seen: number[] = [];
      const source = new EventSource(url);
      const done = () => {
        source.close();
        log(`EventSource Countdown → ${seen.join(", ")}`);
        resolve(seen);
      };
      source.onmessage = (e) => seen.push((JSON.parse(e.data as string) as { result: { remaining: number } }).result.remaining);
      source.addEventListener("end", done);
      source.onerror = done;
    });
  },

  /** A streaming call over WebSocket: sends `requests` (then the half-close), collects every frame until the close. */
  webSocket(url: string, protocols: string[], requests: unknown[]): Promise<{ frames: unknown[]; code: number }> {
    return new Promise((resolve) => {
      const frames: unknown[] = [];
      const ws = new WebSocket(url, protocols);
      ws.onopen = () => {
        for (const r of requests) ws.send(JSON.stringify(r));
        ws.send(""); // half-close
      };
      ws.onmessage = (e) => frames.push(JSON.parse(e.data as string));
      ws.onclose = (e) => {
        log(`WebSocket ${new URL(url).pathname} → ${JSON.stringify(frames)} (close ${e.code})`);
        resolve({ frames, code: e.code });
      };
    });
  },
};

(globalThis as unknown as { api: PageApi }).api = api;
