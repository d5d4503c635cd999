// Markdown to HTML for the docs served at /docs (marked, GitHub-flavoured). The docs are
// ours, but the HTML is made so that no text in them can put markup or script into the page:
// raw HTML is shown as text, images as their alt text, and a link keeps its href only when it
// is a fragment, an http(s) or mailto URL, or another doc; any other link (javascript:, data:,
// a file of the repository that the server does not serve) keeps its text and loses the link.
// Headings get GitHub's ids, so `doc.md#a-heading` means the same on GitHub and here.
import { Marked, type Tokens } from "marked";

const escapeHtml = (s: string) => s.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);

/** GitHub's id for a heading's text: lower case, punctuation dropped, each space a hyphen. */
export function slug(text: string): string {
  return text.trim().toLowerCase().replace(/[^\p{L}\p{N}\s_-]/gu, "").replace(/\s/g, "-");
}

/** Where a relative link to another doc points in the served HTML; null: not a doc. */
export type DocLink = (file: string, fragment: string) => string | null;

function safeHref(href: string, docLink: DocLink): string | null {
  if (href.startsWith("#")) return href;
  if (/^(https?:|mailto:)/i.test(href)) return href;
  if (/^[a-z][a-z0-9+.-]*:/i.test(href) || href.startsWith("//")) return null;
  const hash = href.indexOf("#");
  return docLink(hash === -1 ? href : href.slice(0, hash), hash === -1 ? "" : href.slice(hash));
}

/** One document's HTML. */
export function renderMarkdown(source: string, docLink: DocLink): string {
  const ids = new Map<string, number>();
  const marked = new Marked({
    gfm: true,
    async: false,
    renderer: {
      html({ text }: Tokens.HTML | Tokens.Tag) {
        // A comment is a note to whoever edits the file; anything else is shown as written.
        return /^\s*<!--[\s\S]*-->\s*$/.test(text) ? "" : escapeHtml(text);
      },
      heading({ tokens, depth }: Tokens.Heading) {
        const base = slug(this.parser.parseInline(tokens, this.parser.textRenderer));
        const seen = ids.get(base) ?? 0;
        ids.set(base, seen + 1);
        const id = seen === 0 ? base : `${base}-${seen}`;
        return `<h${depth} id="${escapeHtml(id)}">${this.parser.parseInline(tokens)}</h${depth}>\n`;
      },
      link({ href, title, tokens }: Tokens.Link) {
        const inner = this.parser.parseInline(tokens);
        const target = safeHref(href, docLink);
        if (target === null) return inner;
        return `<a href="${escapeHtml(target)}"${title ? ` title="${escapeHtml(title)}"` : ""}>${inner}</a>`;
      },
      image({ text }: Tokens.Image) {
        return escapeHtml(text);
      },
    },
  });
  return marked.parse(source, { async: false });
}
