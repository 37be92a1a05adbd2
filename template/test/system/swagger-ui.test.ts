/** Swagger UI really loads and works, offline, in headless Chromium (Debian's chromium, installed by CI). */
import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import { after, before, describe, test } from "node:test";
import { promisify } from "node:util";
import { startTestServer, type TestServer } from "../../src/framework/testing/harness.js";
import { fixtureService } from "../framework/fixtures/fixture-service.js";
import { launchChromium } from "./chromium.js";

describe("Swagger UI in headless Chromium", () => {
  let server: TestServer;
  before(async () => {
    server = await startTestServer([fixtureService]);
  });
  after(() => server.close());

  test("loads offline, lists the operations and runs Echo with Try it out", async () => {
    const browser = await launchChromium();
    try {
      const page = await browser.newPage();
      const outside: string[] = [];
      const problems: string[] = [];
      // Only loopback may be reached; anything else is recorded and refused.
      await page.route("**/*", (route) => {
        const url = new URL(route.request().url());
        if (url.hostname === "127.0.0.1" || url.protocol === "data:") return route.continue();
        outside.push(url.href);
        return route.abort();
      });
      page.on("console", (m) => {
        if (m.type() === "error") problems.push(m.text());
      });
      page.on("pageerror", (e) => problems.push(e.message));

      await page.goto(`${server.httpUrl}/swagger/`);
      await page.waitForSelector('.opblock-summary-path[data-path="/api/v1/echo"]', { timeout: 15_000 });
      const paths = await page.$$eval(".opblock-summary-path", (els) => els.map((e) => e.getAttribute("data-path")));
      assert.deepEqual([...new Set(paths)].sort(), [
        "/api/v1/chat",
        "/api/v1/countdown",
        "/api/v1/countdown/{from}",
        "/api/v1/echo",
        "/api/v1/echo/{message}",
        "/api/v1/fail",
        "/api/v1/sum",
      ]);
      // It shows the OpenAPI 3.1 document (the 2.0 one is the other choice of the top bar).
      assert.equal((await page.locator(".info .version-stamp").first().textContent())?.trim(), "OAS 3.1");
      assert.deepEqual(await page.locator(".download-url-wrapper select option").allTextContents(), ["OpenAPI 3.1", "OpenAPI 2.0"]);

      // Try it out: GET /api/v1/echo/{message} through the UI, answered by the gateway.
      const get = page.locator("#operations-FixtureService-FixtureService_Echo2");
      await get.locator(".opblock-summary-control").click();
      await get.locator(".try-out__btn").click();
      await get.locator('input[placeholder="message"]').fill("from swagger ui");
      await get.locator(".execute").click();
      const body = get.locator(".responses-wrapper .live-responses-table .response-col_description pre.microlight");
      await body.first().waitFor({ timeout: 10_000 });
      assert.match((await body.first().textContent()) ?? "", /from swagger ui/);

      assert.deepEqual(outside, [], "no request left loopback");
      assert.deepEqual(problems, [], "no console errors (CSP violations included)");
    } finally {
      await browser.close();
    }
  });

  test("on the admin port, Try it out calls the HTTP port (allowed by CORS as the admin port's own origin)", async () => {
    const admin = await startTestServer([fixtureService], { ADMIN_PORT: "0" });
    const browser = await launchChromium();
    try {
      const page = await browser.newPage();
      const problems: string[] = [];
      page.on("console", (m) => {
        if (m.type() === "error") problems.push(m.text());
      });
      const apiCalls: string[] = [];
      page.on("request", (r) => {
        if (r.url().includes("/api/v1/echo/")) apiCalls.push(new URL(r.url()).origin);
      });
      await page.goto(`${admin.adminUrl}/swagger/`);
      const get = page.locator("#operations-FixtureService-FixtureService_Echo2");
      await get.locator(".opblock-summary-control").click({ timeout: 15_000 });
      await get.locator(".try-out__btn").click();
      await get.locator('input[placeholder="message"]').fill("across ports");
      await get.locator(".execute").click();
      const body = get.locator(".responses-wrapper .live-responses-table .response-col_description pre.microlight");
      await body.first().waitFor({ timeout: 10_000 });
      assert.match((await body.first().textContent()) ?? "", /across ports/);
      assert.deepEqual([...new Set(apiCalls)], [admin.httpUrl], "the call went to the HTTP port");
      assert.deepEqual(problems, [], "no console errors (no CORS failure)");
    } finally {
      await browser.close();
      await admin.close();
    }
  });

  test("Authorize takes the bare token `make token` prints (the UI adds Bearer) and Try it out then answers 200", async () => {
    const secret = "0123456789abcdef0123456789abcdef";
    const secured = await startTestServer([fixtureService], { JWT_SECRET: secret });
    // What `make token` runs, with the same secret.
    const { stdout } = await promisify(execFile)(process.execPath, ["--import", "tsx", "scripts/token.ts"], {
      env: { ...process.env, JWT_SECRET: secret },
    });
    const token = stdout.trim();
    assert.match(token, /^[\w-]+\.[\w-]+\.[\w-]+$/);
    const browser = await launchChromium();
    try {
      const page = await browser.newPage();
      const sent: (string | undefined)[] = [];
      page.on("request", (r) => {
        if (r.url().includes("/api/v1/echo/")) sent.push(r.headers().authorization);
      });
      await page.goto(`${secured.httpUrl}/swagger/`);
      await page.locator(".auth-wrapper .authorize").click({ timeout: 15_000 });
      const dialog = page.locator(".modal-ux");
      const text = (await dialog.textContent()) ?? "";
      assert.doesNotMatch(text, /entered as "Bearer "\./, "the dialog's text lost a placeholder to HTML");
      assert.match(text, /paste the token alone/);
      await dialog.locator("input").first().fill(token);
      await dialog.locator("button.authorize").click();
      await dialog.locator("button.btn-done").click();

      const get = page.locator("#operations-FixtureService-FixtureService_Echo2");
      await get.locator(".opblock-summary-control").click();
      await get.locator(".try-out__btn").click();
      await get.locator('input[placeholder="message"]').fill("authorized");
      await get.locator(".execute").click();
      const status = get.locator(".responses-wrapper .live-responses-table .response .response-col_status");
      await status.first().waitFor({ timeout: 10_000 });
      assert.equal((await status.first().textContent())?.trim(), "200");
      assert.deepEqual(sent, [`Bearer ${token}`]);
    } finally {
      await browser.close();
      await secured.close();
    }
  });
});
