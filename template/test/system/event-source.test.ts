/**
 * GET-mapped server streams with a real browser EventSource, in headless Chromium (Debian's
 * `chromium`, installed by CI), in each gateway mode. The page is served by the test on the
 * service's own loopback origin, so no CORS is involved.
 */
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import type { Browser, Page } from "playwright-core";
import { startTestServer, type TestServer } from "../../src/framework/testing/harness.js";
import { fixtureService } from "../framework/fixtures/fixture-service.js";
import { createLibrary } from "../framework/gateway-library.js";
import { launchChromium } from "./chromium.js";

interface Outcome {
  messages: unknown[];
  /** Data of `event: error` frames (stream errors after messages). */
  errors: unknown[];
  /** EventSource.readyState at the connection error that ended it: 0 would reconnect, 2 gave up. */
  readyState: number;
  /** Whether the stream's `end` event arrived (and the page closed the source on it, as the README shows). */
  ended: boolean;
}

/** Opens an EventSource in the page and collects its events until the connection ends. */
function listen(page: Page, path: string): Promise<Outcome> {
  return page.evaluate(
    (url) =>
      new Promise<Outcome>((resolve) => {
        const messages: unknown[] = [];
        const errors: unknown[] = [];
        const source = new EventSource(url);
        source.onmessage = (e) => messages.push(JSON.parse(e.data as string));
        source.addEventListener("end", () => {
          source.close();
          resolve({ messages, errors, readyState: source.readyState, ended: true });
        });
        source.addEventListener("error", (e) => {
          const data = (e as unknown as { data?: string }).data;
          if (data !== undefined) return void errors.push(JSON.parse(data));
          // The connection ended (a stream's normal end included): stop it from reconnecting.
          const readyState = source.readyState;
          source.close();
          resolve({ messages, errors, readyState, ended: false });
        });
      }),
    path,
  );
}

describe("EventSource in headless Chromium", () => {
  let browser: Browser;
  before(async () => {
    browser = await launchChromium();
  });
  after(() => browser?.close());

  for (const mode of ["tcp", "unix", "in-process"] as const) {
    describe(`gateway mode ${mode}`, () => {
      let server: TestServer;
      let page: Page;
      let library: ReturnType<typeof createLibrary>;
      before(async () => {
        library = createLibrary();
        server = await startTestServer([fixtureService, library.service], { GATEWAY_MODE: mode });
        page = await browser.newPage();
        // The test page, on the service's origin; every other request goes to the real server.
        await page.route(`${server.httpUrl}/eventsource-test`, (route) =>
          route.fulfill({ contentType: "text/html", body: "<!doctype html><title>EventSource</title>" }),
        );
        await page.goto(`${server.httpUrl}/eventsource-test`);
      });
      after(async () => {
        await page?.close();
        await server?.close();
      });

      test("receives every message of GET /api/v1/countdown/3, then the `end` event, and closes without replaying", async () => {
        const outcome = await listen(page, "/api/v1/countdown/3");
        assert.deepEqual(outcome.messages, [{ result: { remaining: 3 } }, { result: { remaining: 2 } }, { result: { remaining: 1 } }]);
        assert.deepEqual(outcome.errors, []);
        assert.equal(outcome.ended, true, "the end event reached the page");
        assert.equal(outcome.readyState, 2, "EventSource.CLOSED: no reconnect");
      });

      test("a library stream that succeeds is called once: the browser does not reconnect after `end`", async () => {
        const before = library.seen.length;
        const outcome = await listen(page, "/v1/shelves/s1/titles:watch?count=2");
        assert.deepEqual(outcome.messages, [{ result: "Book 1" }, { result: "Book 2" }]);
        assert.equal(outcome.ended, true);
        // Give a reconnect the chance to happen: a second page request round trip, then count the calls.
        await page.evaluate(() => fetch("/healthcheck").then((r) => r.text()));
        assert.equal(library.seen.length - before, 1, "one call to the stream's handler");
      });

      test("gets a stream error as an `error` event with data", async () => {
        const outcome = await listen(page, "/v1/shelves/s1/titles:watch?count=2&failCode=14");
        assert.deepEqual(outcome.messages, [{ result: "Book 1" }, { result: "Book 2" }]);
        assert.deepEqual(outcome.errors, [{ error: { code: 14, message: "watch failed", details: [] } }]);
      });

      test("an error before the first message is an HTTP error: the browser gives up instead of reconnecting", async () => {
        const outcome = await listen(page, "/api/v1/countdown/0");
        assert.deepEqual(outcome.messages, []);
        assert.equal(outcome.readyState, 2, "EventSource.CLOSED");
      });
    });
  }
});
