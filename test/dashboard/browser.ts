// Headless Chromium (Debian's package) for the dashboard's browser tests and benchmark,
// driven by playwright-core; screenshots go to test/artifacts/.
import { mkdir } from "node:fs/promises";
import path from "node:path";
import { chromium, type Browser, type Page } from "playwright-core";
import { TEST_PASSWORD } from "../support/people.ts";

export const CHROMIUM = process.env.BERTH_CHROMIUM ?? "/usr/bin/chromium";
export const ARTIFACTS = path.resolve(import.meta.dirname, "../artifacts");

export function launchBrowser(): Promise<Browser> {
  return chromium.launch({ executablePath: CHROMIUM, args: ["--no-sandbox", "--disable-dev-shm-usage"] });
}

/** A page that records uncaught script errors, so a test can assert there were none. */
export async function openPage(browser: Browser): Promise<Page & { scriptErrors: string[] }> {
  const context = await browser.newContext({ viewport: { width: 1366, height: 860 } });
  const page = (await context.newPage()) as Page & { scriptErrors: string[] };
  page.scriptErrors = [];
  page.on("pageerror", (err) => page.scriptErrors.push(err.message));
  // A Content-Security-Policy violation is reported on the console: count it as an error.
  page.on("console", (msg) => {
    if (msg.type() === "error" && /Content Security Policy/i.test(msg.text())) page.scriptErrors.push(msg.text());
  });
  return page;
}

export async function signIn(page: Page, baseUrl: string, email: string): Promise<void> {
  await page.goto(`${baseUrl}/`);
  await page.getByLabel("E-mail address").fill(email);
  await page.getByLabel("Password").fill(TEST_PASSWORD);
  await page.getByRole("button", { name: "Sign in" }).click();
  await page.locator("#topbar").waitFor({ state: "visible" });
}

export async function screenshot(page: Page, name: string): Promise<string> {
  await mkdir(ARTIFACTS, { recursive: true });
  const file = path.join(ARTIFACTS, `${name}.png`);
  await page.screenshot({ path: file, fullPage: false });
  return file;
}
