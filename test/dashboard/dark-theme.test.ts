// The dashboard follows the system's colour scheme: dark surfaces and light text when the
// browser asks for dark, the light theme otherwise, with readable contrast in both, on the
// pages people keep open (servers with live figures, a form, a table).
import type { Page } from "playwright-core";
import { expect, it } from "vitest";
import { screenshot } from "./browser.ts";
import { dashboardSuite } from "./dashboard-suite.ts";

const suite = dashboardSuite();

type Rgb = [number, number, number];
const rgb = (css: string): Rgb => {
  const m = /rgba?\((\d+),\s*(\d+),\s*(\d+)/.exec(css);
  if (!m) throw new Error(`not an rgb colour: ${css}`);
  return [Number(m[1]), Number(m[2]), Number(m[3])];
};
/** WCAG relative luminance and contrast ratio. */
const luminance = (c: Rgb) => {
  const [r, g, b] = c.map((v) => {
    const s = v / 255;
    return s <= 0.03928 ? s / 12.92 : ((s + 0.055) / 1.055) ** 2.4;
  }) as Rgb;
  return 0.2126 * r + 0.7152 * g + 0.0722 * b;
};
const contrast = (a: Rgb, b: Rgb) => {
  const [hi, lo] = [luminance(a), luminance(b)].sort((x, y) => y - x) as [number, number];
  return (hi + 0.05) / (lo + 0.05);
};

async function colours(page: Page, selector: string): Promise<{ fg: Rgb; bg: Rgb }> {
  const { color, background } = await page.locator(selector).first().evaluate((el) => {
    const style = getComputedStyle(el);
    // The nearest ancestor with a background of its own is what the text sits on.
    let node: Element | null = el;
    let bg = "rgba(0, 0, 0, 0)";
    while (node && /rgba\(0, 0, 0, 0\)|transparent/.test(bg)) {
      bg = getComputedStyle(node).backgroundColor;
      node = node.parentElement;
    }
    return { color: style.color, background: bg };
  });
  return { fg: rgb(color), bg: rgb(background) };
}

for (const scheme of ["dark", "light"] as const) {
  it(`uses the ${scheme} theme when the system asks for it, with readable text`, async () => {
    const page = await suite.pageFor(suite.owner);
    await page.emulateMedia({ colorScheme: scheme });
    await page.goto(`${suite.base}/#/servers`);
    const card = page.locator(`li.server-card[data-server-id="${suite.d.server_id}"]`);
    await card.waitFor();
    const body = await colours(page, "main h1");
    const cardText = await colours(page, `li.server-card[data-server-id="${suite.d.server_id}"] h2, li.server-card[data-server-id="${suite.d.server_id}"] a`);
    for (const { fg, bg } of [body, cardText]) {
      if (scheme === "dark") {
        expect(luminance(bg)).toBeLessThan(0.05);
        expect(luminance(fg)).toBeGreaterThan(0.4);
      } else {
        expect(luminance(bg)).toBeGreaterThan(0.8);
      }
      expect(contrast(fg, bg)).toBeGreaterThanOrEqual(4.5);
    }
    // A form: the fields and the main button stay readable too.
    await page.goto(`${suite.base}/#/settings`);
    const input = await colours(page, "main input");
    expect(contrast(input.fg, input.bg)).toBeGreaterThanOrEqual(4.5);
    if (scheme === "dark") expect(luminance(input.bg)).toBeLessThan(0.05);
    const button = await colours(page, "main button:not(.secondary):not(.link):not(.danger)");
    expect(contrast(button.fg, button.bg)).toBeGreaterThanOrEqual(4.5);
    await screenshot(page, `settings-${scheme}`);
  }, 60_000);
}
