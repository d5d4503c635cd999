// The docs served by a real control plane over HTTP: GET /docs lists every file of
// apps/control-plane/docs and the API explorers, GET /docs/<topic> renders each as HTML with
// the page's policy, an unknown topic is the usual error body, every link in a served page
// leads to a page (and heading) that exists, and the dashboard links to /docs.
import { readdirSync, readFileSync } from "node:fs";
import type { AddressInfo } from "node:net";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startControlPlane, type TestControlPlane } from "../support/control-plane.ts";

const ROOT = fileURLToPath(new URL("../..", import.meta.url));
const DOCS_DIR = path.join(ROOT, "apps/control-plane/docs");
const topics = readdirSync(DOCS_DIR).filter((f) => f.endsWith(".md")).map((f) => f.slice(0, -3));

let cp: TestControlPlane;
let base: string;

beforeAll(async () => {
  cp = await startControlPlane({ listen: true });
  base = `http://127.0.0.1:${(cp.app.server.address() as AddressInfo).port}`;
}, 60_000);

afterAll(async () => cp?.close());

const titleOf = (topic: string) => /^# (.+)$/m.exec(readFileSync(path.join(DOCS_DIR, `${topic}.md`), "utf8"))![1]!.replaceAll("`", "");
const htmlText = (s: string) => s.replace(/&#39;/g, "'").replace(/&amp;/g, "&");

describe("GET /docs", () => {
  it("lists every doc file by its title, and the API explorers, which answer", async () => {
    expect(topics.length).toBeGreaterThanOrEqual(10);
    const res = await fetch(`${base}/docs`);
    expect(res.status).toBe(200);
    expect(res.headers.get("content-type")).toContain("text/html");
    const body = await res.text();
    for (const topic of topics) {
      expect(body).toContain(`<a href="/docs/${topic}">`);
      expect(htmlText(body)).toContain(titleOf(topic));
    }
    for (const explorer of ["/api/public/v1/docs", "/api/public/v1/redoc", "/api/public/v1/openapi.json", "/api/v1/openapi.json"]) {
      expect(body).toContain(`href="${explorer}"`);
      expect((await fetch(`${base}${explorer}`)).status, explorer).toBe(200);
    }
  });
});

describe("GET /docs/<topic>", () => {
  it("renders each doc as HTML under its first heading, with a policy that runs no script", async () => {
    for (const topic of topics) {
      const res = await fetch(`${base}/docs/${topic}`);
      expect(res.status, topic).toBe(200);
      expect(res.headers.get("content-type")).toBe("text/html; charset=utf-8");
      const csp = res.headers.get("content-security-policy") ?? "";
      expect(csp).toContain("default-src 'none'");
      expect(csp).not.toMatch(/script-src|unsafe-inline/);
      expect(res.headers.get("x-content-type-options")).toBe("nosniff");
      const body = await res.text();
      expect(htmlText(body)).toMatch(new RegExp(`<h1 id="[^"]+">[^]*?${titleOf(topic).replace(/[()]/g, "\\$&")}`));
      expect(body).not.toMatch(/<script|<iframe|javascript:/i);
    }
  });

  it("renders Markdown: the production doc's commands are a code block, its tables tables", async () => {
    const body = await (await fetch(`${base}/docs/production`)).text();
    expect(body).toContain('<pre><code class="language-sh">git clone &lt;repository&gt; berth &amp;&amp; cd berth');
    expect(body).toMatch(/<table>[^]*<th>Variable<\/th>/);
    expect(body).toContain('<h2 id="the-master-key">The master key</h2>');
  });

  it("answers an unknown topic with 404 doc_not_found in the error body every route uses", async () => {
    for (const topic of ["nope", "production.md", "..%2F..%2Fpackage.json", "README"]) {
      const res = await fetch(`${base}/docs/${topic}`);
      expect(res.status, topic).toBe(404);
      const body = (await res.json()) as { error: string; message: string; request_id: string };
      expect(body.error).toBe("doc_not_found");
      expect(body.message).toContain("/docs lists them");
      expect(body.request_id).toBe(res.headers.get("x-request-id"));
    }
  });

  it("every link in a served page leads to a page that answers, and to a heading that is there", async () => {
    const pages = new Map<string, string>();
    const load = async (p: string) => {
      if (!pages.has(p)) pages.set(p, await (await fetch(`${base}${p}`)).text());
      return pages.get(p)!;
    };
    const checked: string[] = [];
    for (const topic of ["", ...topics.map((t) => `/${t}`)]) {
      const body = await load(`/docs${topic}`);
      for (const [, href] of body.matchAll(/<a href="([^"]+)"/g)) {
        if (!href!.startsWith("/docs")) continue;
        const [p, fragment] = href!.split("#");
        const target = await load(p!);
        expect(target, `${href} (from /docs${topic})`).toMatch(/^<!doctype html>/);
        if (fragment) expect(target, `${href} (from /docs${topic})`).toContain(`id="${fragment}"`);
        checked.push(href!);
      }
    }
    expect(checked.length).toBeGreaterThan(topics.length);
  });

  it("is hidden from both OpenAPI documents", async () => {
    for (const doc of ["/api/public/v1/openapi.json", "/api/v1/openapi.json"]) {
      const spec = (await (await fetch(`${base}${doc}`)).json()) as { paths: Record<string, unknown> };
      expect(Object.keys(spec.paths).filter((p) => p.includes("docs/") || p.endsWith("/docs"))).toEqual([]);
    }
  });
});

describe("the dashboard", () => {
  it("links to /docs from its top bar", async () => {
    const body = await (await fetch(`${base}/`)).text();
    expect(body).toMatch(/<header class="topbar"[^]*<a href="\/docs"[^>]*>Docs<\/a>[^]*<\/header>/);
  });
});
