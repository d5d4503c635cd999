// README.md and the docs of apps/control-plane/docs as files: the README stays short, each
// doc opens with its title and what a reader comes for, and every relative link (to a file,
// a heading of another doc or one of its own) points at something that exists. Headings'
// ids are those markdown.ts gives, which are GitHub's.
import { existsSync, readdirSync, readFileSync } from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";
import { renderMarkdown } from "../../apps/control-plane/src/modules/docs/markdown.ts";

const ROOT = fileURLToPath(new URL("../..", import.meta.url));
const DOCS_DIR = path.join(ROOT, "apps/control-plane/docs");
const docs = readdirSync(DOCS_DIR).filter((f) => f.endsWith(".md")).map((f) => path.join(DOCS_DIR, f));
const README = path.join(ROOT, "README.md");

/** The ids of a Markdown file's headings. */
function headingIds(file: string): Set<string> {
  const html = renderMarkdown(readFileSync(file, "utf8"), () => null);
  return new Set([...html.matchAll(/ id="([^"]+)"/g)].map((m) => m[1]!));
}

/** Each relative link of a file that does not resolve, as "file: link (why)". */
function brokenLinks(file: string): string[] {
  const relative: Array<{ target: string; fragment: string }> = [];
  const html = renderMarkdown(readFileSync(file, "utf8"), (target, fragment) => {
    relative.push({ target, fragment });
    return null;
  });
  const own = headingIds(file);
  const broken: string[] = [];
  const name = path.relative(ROOT, file);
  for (const [, id] of html.matchAll(/<a href="#([^"]*)"/g)) if (!own.has(id!)) broken.push(`${name}: #${id} (no such heading)`);
  for (const { target, fragment } of relative) {
    const resolved = path.resolve(path.dirname(file), decodeURIComponent(target));
    if (!existsSync(resolved)) broken.push(`${name}: ${target} (no such file)`);
    else if (fragment !== "" && resolved.endsWith(".md") && !headingIds(resolved).has(fragment.slice(1))) broken.push(`${name}: ${target}${fragment} (no such heading)`);
  }
  return broken;
}

describe("README.md and the docs", () => {
  it("README.md fits on a few screens (150 lines at most) and links every doc", () => {
    const readme = readFileSync(README, "utf8");
    expect(readme.split("\n").length).toBeLessThanOrEqual(150);
    for (const doc of docs) expect(readme).toContain(`](${path.relative(ROOT, doc)})`);
  });

  it("each doc opens with its title and a paragraph saying what a reader comes for", () => {
    for (const doc of docs) {
      const [title, intro] = readFileSync(doc, "utf8").split(/\n\s*\n/);
      expect(title, doc).toMatch(/^# \S/);
      // Prose: a sentence, not a heading, a table, a list or a code block.
      expect(intro, doc).toMatch(/^[A-Z][^]*[.)]$/);
    }
  });

  it("every relative link in README.md and the docs points at a file, and a heading, that exist", () => {
    expect(docs.length).toBeGreaterThanOrEqual(10);
    expect([README, ...docs].flatMap(brokenLinks)).toEqual([]);
  });

  it("finds a broken link when there is one (the check checks)", () => {
    const broken = brokenLinks(path.join(ROOT, "test/docs/fixtures/broken-links.md"));
    expect(broken).toEqual([
      "test/docs/fixtures/broken-links.md: #nowhere (no such heading)",
      "test/docs/fixtures/broken-links.md: ../../../apps/control-plane/docs/missing.md (no such file)",
      "test/docs/fixtures/broken-links.md: ../../../apps/control-plane/docs/production.md#no-such-part (no such heading)",
    ]);
  });
});
