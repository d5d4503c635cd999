// The HTML page around a doc or the index, and the headers it is sent with. Its one style
// sheet is inline and allowed by its hash, so the policy allows nothing else: no script, no
// other style, no frame, no form (the docs' own text is escaped by markdown.ts as well).
import { createHash } from "node:crypto";

const STYLE = `
:root { color-scheme: light dark; font-family: system-ui, sans-serif; line-height: 1.5; }
body { margin: 0; }
header { padding: .6rem 1.5rem; border-bottom: 1px solid #8884; display: flex; gap: 1.2rem; flex-wrap: wrap; }
header a { text-decoration: none; }
main { max-width: 52rem; padding: 1rem 1.5rem 3rem; }
pre { overflow-x: auto; padding: .6rem; background: #8881; border-radius: 4px; }
code { font-size: .92em; }
table { border-collapse: collapse; display: block; overflow-x: auto; }
th, td { border: 1px solid #8886; padding: .25rem .5rem; text-align: left; vertical-align: top; }
dt { font-weight: 600; margin-top: .8rem; }
dd { margin-left: 0; }
`;

export const PAGE_HEADERS = {
  "content-security-policy": `default-src 'none'; style-src 'sha256-${createHash("sha256").update(STYLE).digest("base64")}'; img-src 'self' data:; base-uri 'none'; form-action 'none'; frame-ancestors 'none'`,
  "referrer-policy": "no-referrer",
  "x-content-type-options": "nosniff",
  "cache-control": "no-cache",
};

/** The API explorers and documents the control plane serves (public-api/openapi.ts). */
export const API_EXPLORERS: ReadonlyArray<{ href: string; label: string }> = [
  { href: "/api/public/v1/docs", label: "Public API: Swagger UI" },
  { href: "/api/public/v1/redoc", label: "Public API: ReDoc" },
  { href: "/api/public/v1/openapi.json", label: "Public API: OpenAPI 3.1 document" },
  { href: "/api/v1/openapi.json", label: "Platform API: OpenAPI 3.1 document" },
];

export const escapeText = (s: string) => s.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);

/** A whole page; `body` is HTML made by markdown.ts or from escaped text. */
export function page(title: string, body: string): string {
  return `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>${escapeText(title)} · Berth docs</title>
<style>${STYLE}</style>
</head>
<body>
<header><a href="/docs">Docs</a><a href="/api/public/v1/docs">API explorer</a><a href="/">Dashboard</a></header>
<main>
${body}
</main>
</body>
</html>
`;
}
