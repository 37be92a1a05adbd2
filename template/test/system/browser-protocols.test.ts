/**
 * A page served from another origin calls the service in headless Chromium (Debian's chromium):
 * Echo through a Connect and a gRPC-Web client (@connectrpc/connect-web, bundled by esbuild, typed
 * from the service's generated code), Countdown through EventSource, and Countdown and a Chat over WebSocket, all
 * allowed by CORS_ALLOWED_ORIGINS; the same page on an origin not listed gets nothing. A screenshot of
 * the page is kept in test-results/ (not committed).
 */
import assert from "node:assert/strict";
import { mkdirSync } from "node:fs";
import { createServer, type Server } from "node:http";
import { dirname, join } from "node:path";
import { after, before, describe, test } from "node:test";
import { fileURLToPath } from "node:url";
import { build } from "esbuild";
import type { Browser, Page } from "playwright-core";
import { WS_PROTOCOL } from "../../src/framework/browser/websocket.js";
import { defineService } from "../../src/framework/index.js";
import { startTestServer, type TestServer } from "../../src/framework/testing/harness.js";
import { fixtureService } from "../framework/fixtures/fixture-service.js";
import { FixtureService } from "../gen/fixture/v1/fixture_pb.js";
import type { PageApi } from "./browser-page.js";
import { launchChromium } from "./chromium.js";

/** In the page's globals (page.evaluate runs its function in the browser: it can reference nothing of this file). */
type PageGlobals = { api: PageApi };

const here = dirname(fileURLToPath(import.meta.url));
const RESULTS = join(here, "..", "..", "test-results");

/** Serves the test page and its bundled script; its origin differs from the service's (another port). */
async function startPageServer(): Promise<{ server: Server; port: number }> {
  const bundle = await build({
    entryPoints: [join(here, "browser-page.ts")],
    bundle: true,
    write: false,
    format: "esm",
    platform: "browser",
    target: "chrome120",
    logLevel: "silent",
  });
  const script = bundle.outputFiles[0]!.text;
  const html =
    '<!doctype html><meta charset="utf-8"><title>Calling the service from a browser</title>' +
    '<h1>Calling the service from another origin</h1><ul id="log"></ul><script type="module" src="/app.js"></script>';
  const server = createServer((req, res) => {
    if (req.url === "/app.js") res.writeHead(200, { "content-type": "text/javascript" }).end(script);
    else res.writeHead(200, { "content-type": "text/html" }).end(html);
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  return { server, port: (server.address() as { port: number }).port };
}

async function openPage(browser: Browser, url: string): Promise<Page> {
  const page = await browser.newPage();
  await page.goto(url);
  await page.waitForFunction(() => "api" in globalThis);
  return page;
}

describe("a page on another origin calls the service", () => {
  let browser: Browser;
  let pages: { server: Server; port: number };
  let service: TestServer;
  let allowed: string;
  let api: string;
  before(async () => {
    pages = await startPageServer();
    // The page's origin names localhost; the same page at 127.0.0.1 is another origin, not allowed.
    allowed = `http://localhost:${pages.port}`;
    service = await startTestServer([fixtureService], { CORS_ALLOWED_ORIGINS: allowed });
    api = service.httpUrl;
    browser = await launchChromium();
  });
  after(async () => {
    await browser?.close();
    await service?.close();
    pages?.server.close();
  });

  test("Connect, gRPC-Web, EventSource and WebSocket (server stream and bidi Chat) from an allowed origin", async () => {
    const page = await openPage(browser, `${allowed}/`);
    try {
      const connect = await page.evaluate(
        ([base]) => (globalThis as unknown as PageGlobals).api.echo(base!, "connect", "hello from Connect"),
        [api],
      );
      assert.equal(connect.message, "hello from Connect");
      const grpcWeb = await page.evaluate(
        ([base]) => (globalThis as unknown as PageGlobals).api.echo(base!, "grpc-web", "hello from gRPC-Web"),
        [api],
      );
      assert.equal(grpcWeb.message, "hello from gRPC-Web");

      const countdown = await page.evaluate(
        ([url]) => (globalThis as unknown as PageGlobals).api.eventSource(url!),
        [`${api}/api/v1/countdown/3`],
      );
      assert.deepEqual(countdown, [3, 2, 1]);

      const ws = api.replace(/^http/, "ws");
      const stream = await page.evaluate(
        ([url, protocol]) => (globalThis as unknown as PageGlobals).api.webSocket(url!, [protocol!], [{ from: 2 }]),
        [`${ws}/fixture.v1.FixtureService/Countdown`, WS_PROTOCOL],
      );
      assert.deepEqual(stream, { frames: [{ result: { remaining: 2 } }, { result: { remaining: 1 } }, { end: {} }], code: 1000 });

      const chat = await page.evaluate(
        ([url, protocol]) => (globalThis as unknown as PageGlobals).api.webSocket(url!, [protocol!], [{ text: "hi" }, { text: "there" }]),
        [`${ws}/fixture.v1.FixtureService/Chat`, WS_PROTOCOL],
      );
      assert.deepEqual(chat, {
        frames: [{ result: { text: "hi", seq: 1 } }, { result: { text: "there", seq: 2 } }, { end: {} }],
        code: 1000,
      });

      mkdirSync(RESULTS, { recursive: true });
      await page.screenshot({ path: join(RESULTS, "browser-protocols.png"), fullPage: true });
    } finally {
      await page.close();
    }
  });

  test("an origin not allowed can neither read a response nor open a WebSocket", async () => {
    const page = await openPage(browser, `http://127.0.0.1:${pages.port}/`);
    try {
      const echo = await page.evaluate(
        ([base]) =>
          (globalThis as unknown as PageGlobals).api.echo(base!, "connect", "x").then(
            () => "read",
            (e: Error) => e.message,
          ),
        [api],
      );
      assert.notEqual(echo, "read");
      const ws = api.replace(/^http/, "ws");
      const stream = await page.evaluate(
        ([url, protocol]) => (globalThis as unknown as PageGlobals).api.webSocket(url!, [protocol!], [{ from: 1 }]),
        [`${ws}/fixture.v1.FixtureService/Countdown`, WS_PROTOCOL],
      );
      assert.deepEqual(stream, { frames: [], code: 1006 }, "the upgrade was refused");
    } finally {
      await page.close();
    }
  });
});

describe("a page on another origin reads custom response metadata once CORS_EXPOSED_HEADERS names it", () => {
  // Echo answers a custom response header and a trailer, which Connect's unary protocol sends as trailer-<name>.
  const metadataService = defineService(FixtureService, {
    handlers: {
      ...fixtureService.handlers,
      echo(request, ctx) {
        ctx.responseHeader.set("x-request-cost", "3");
        ctx.responseTrailer.set("x-request-total", "7");
        return { message: request.message };
      },
    },
  });
  let browser: Browser;
  let pages: { server: Server; port: number };
  let origin: string;
  before(async () => {
    pages = await startPageServer();
    origin = `http://localhost:${pages.port}`;
    browser = await launchChromium();
  });
  after(async () => {
    await browser?.close();
    pages?.server.close();
  });

  const read = async (env: Record<string, string>) => {
    const service = await startTestServer([metadataService], { CORS_ALLOWED_ORIGINS: origin, ...env });
    const page = await openPage(browser, `${origin}/`);
    try {
      return await page.evaluate(
        ([base]) => (globalThis as unknown as PageGlobals).api.echoMetadata(base!, "x-request-cost", "x-request-total"),
        [service.httpUrl],
      );
    } finally {
      await page.close();
      await service.close();
    }
  };

  test("without it the browser hides both; with it the page reads the header and the Connect trailer", async () => {
    assert.deepEqual(await read({}), { header: null, trailer: null });
    assert.deepEqual(await read({ CORS_EXPOSED_HEADERS: "x-request-cost,trailer-x-request-total" }), { header: "3", trailer: "7" });
  });
});
