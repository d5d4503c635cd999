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

/**
 * A page that records uncaught script errors, so a test can assert there were none, and the
 * requests that failed, so a page that does not come up says why.
 */
export type TestPage = Page & { scriptErrors: string[]; failedRequests: string[] };

export async function openPage(browser: Browser): Promise<TestPage> {
  const context = await browser.newContext({ viewport: { width: 1366, height: 860 } });
  const page = (await context.newPage()) as TestPage;
  page.scriptErrors = [];
  page.failedRequests = [];
  page.on("pageerror", (err) => page.scriptErrors.push(err.message));
  page.on("requestfailed", (req) => page.failedRequests.push(`${req.method()} ${req.url()}: ${req.failure()?.errorText ?? "failed"}`));
  page.on("response", (res) => {
    if (res.status() >= 500 || (res.status() >= 400 && new URL(res.url()).pathname.startsWith("/assets/"))) page.failedRequests.push(`${res.request().method()} ${res.url()}: ${res.status()}`);
  });
  // A Content-Security-Policy violation is reported on the console: count it as an error.
  page.on("console", (msg) => {
    if (msg.type() === "error" && /Content Security Policy/i.test(msg.text())) page.scriptErrors.push(msg.text());
  });
  return page;
}

/**
 * Opens the dashboard and waits for its sign-in form. A loaded CI machine (two cores, with a
 * cross-compile or an emulated executable beside the browser) can take long to start a new
 * context's renderer, so the wait is generous; a form that never comes says what the page
 * showed and which requests failed.
 */
export async function openSignIn(page: Page, baseUrl: string): Promise<void> {
  await page.goto(`${baseUrl}/`);
  try {
    await page.getByLabel("E-mail address").waitFor({ timeout: 60_000 });
  } catch (err) {
    const shown = await page.locator("body").innerText().catch(() => "(no body)");
    const failed = (page as Partial<{ failedRequests: string[] }>).failedRequests ?? [];
    throw new Error(`the sign-in form did not appear at ${page.url()} (${(err as Error).message.split("\n")[0]}); the page showed ${JSON.stringify(shown.slice(0, 300))}; failed requests: ${failed.join("; ") || "none"}`);
  }
}

export async function signIn(page: Page, baseUrl: string, email: string): Promise<void> {
  await openSignIn(page, baseUrl);
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
