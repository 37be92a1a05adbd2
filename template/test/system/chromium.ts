import assert from "node:assert/strict";
import { existsSync } from "node:fs";
import { type Browser, chromium } from "playwright-core";

/** Debian's chromium; `.ci/run` installs it (`apt-get install chromium`). */
export const CHROMIUM = "/usr/bin/chromium";

/** Headless Chromium with no network beyond loopback (the flags keep it from calling home). */
export function launchChromium(): Promise<Browser> {
  assert.ok(existsSync(CHROMIUM), `${CHROMIUM} is missing: the system tests need Debian's chromium (apt-get install chromium)`);
  return chromium.launch({
    executablePath: CHROMIUM,
    args: [
      "--headless",
      "--no-sandbox",
      "--disable-gpu",
      "--disable-background-networking",
      "--disable-quic",
      "--no-first-run",
      "--disable-component-update",
      "--disable-sync",
    ],
  });
}
