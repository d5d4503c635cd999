// What a doc's text can and cannot put into the page /docs serves: markup written in the
// Markdown is shown as text, links keep only safe targets, and headings get GitHub's ids.
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { loadDocs } from "./docs-library.ts";
import { renderMarkdown, slug } from "./markdown.ts";

const noDocs = () => null;

describe("renderMarkdown", () => {
  it("shows raw HTML as text, block or inline, and drops comments", () => {
    const html = renderMarkdown('<script>alert(1)</script>\n\nText <img src=x onerror="alert(1)"> <b>bold</b>\n\n<!-- a note -->\n', noDocs);
    expect(html).not.toMatch(/<script|<img|<b>|a note/);
    expect(html).toContain("&#60;script&#62;alert(1)&#60;/script&#62;");
    expect(html).toContain("&#60;img src=x onerror=&#34;alert(1)&#34;&#62;");
  });

  it("keeps a link's text but not its target when the target is not http(s), mailto, a fragment or a doc", () => {
    const html = renderMarkdown(
      "[a](javascript:alert(1)) [b](JaVaScRiPt:alert(1)) [c](data:text/html,<script>x</script>) [d](vbscript:x) [e](//evil.example/x) [f](../../../package.json) ![g](javascript:alert(1))",
      noDocs,
    );
    expect(html).toBe("<p>a b c d e f g</p>\n");
  });

  it("keeps safe links, escaped, and sends links to docs where the docs are served", () => {
    const html = renderMarkdown('[a](https://example.com/?q=1&r="2") [b](mailto:x@example.com) [c](#part) [d](production.md#tls) [e](./cli.md) <https://example.org>', (file, fragment) =>
      file.endsWith(".md") ? `/docs/${path.basename(file, ".md")}${fragment}` : null,
    );
    expect(html).toContain('<a href="https://example.com/?q=1&#38;r=&#34;2&#34;">a</a>');
    expect(html).toContain('<a href="mailto:x@example.com">b</a>');
    expect(html).toContain('<a href="#part">c</a>');
    expect(html).toContain('<a href="/docs/production#tls">d</a>');
    expect(html).toContain('<a href="/docs/cli">e</a>');
    expect(html).toContain('<a href="https://example.org">https://example.org</a>');
  });

  it("gives headings GitHub's ids, numbered when repeated", () => {
    const html = renderMarkdown("# Running in production\n\n## The control plane's database\n\n## `BERTH_PORT` & more\n\n## The control plane's database\n", noDocs);
    expect([...html.matchAll(/id="([^"]+)"/g)].map((m) => m[1])).toEqual(["running-in-production", "the-control-planes-database", "berth_port--more", "the-control-planes-database-1"]);
    expect(slug("Moving an ERP in (migrations)")).toBe("moving-an-erp-in-migrations");
  });
});

describe("loadDocs", () => {
  it("reads every topic file with its title and first paragraph, and links between them", () => {
    const dir = mkdtempSync(path.join(os.tmpdir(), "berth-docs-"));
    try {
      writeFileSync(path.join(dir, "first.md"), "# First `one`\n\nWhat it is for, see [second](second.md#b).\n\nMore.\n");
      writeFileSync(path.join(dir, "second.md"), "# Second\n\nWhy.\n\n## B\n\n[back](first.md) [gone](third.md)\n");
      writeFileSync(path.join(dir, "Not A Topic.md"), "# Ignored\n");
      const docs = loadDocs(dir);
      expect([...docs.keys()]).toEqual(["first", "second"]);
      expect(docs.get("first")).toMatchObject({ title: "First one", summary: '<p>What it is for, see <a href="/docs/second#b">second</a>.</p>\n' });
      expect(docs.get("second")!.html).toContain('<a href="/docs/first">back</a> gone');
      writeFileSync(path.join(dir, "untitled.md"), "No title here.\n");
      expect(() => loadDocs(dir)).toThrow('docs: untitled.md has no "# " title');
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
