// GET /docs (the list of docs and the API explorers) and GET /docs/<topic> (one doc of
// apps/control-plane/docs as HTML), for people, with no credential: the same text as the
// repository's Markdown. Hidden from the OpenAPI documents like the dashboard's page.
import type { FastifyInstance, FastifyReply } from "fastify";
import { Type } from "typebox";
import { DomainError } from "../../lib/errors.ts";
import { errors } from "../../lib/http-schemas.ts";
import { loadDocs, type Doc } from "./docs-library.ts";
import { API_EXPLORERS, escapeText, page, PAGE_HEADERS } from "./docs-page.ts";

const Html = Type.String({ description: "An HTML page (text/html)" });
const TopicParams = Type.Object({ topic: Type.String({ maxLength: 64, description: "A doc's file name without .md, e.g. production" }) });

function indexPage(docs: Iterable<Doc>): string {
  const topics = [...docs].map((d) => `<dt><a href="/docs/${d.topic}">${escapeText(d.title)}</a></dt>\n<dd>${d.summary}</dd>`);
  const explorers = API_EXPLORERS.map((e) => `<li><a href="${e.href}">${escapeText(e.label)}</a></li>`);
  return page(
    "Docs",
    `<h1>Berth docs</h1>
<p>How to use, run and operate Berth, one topic a page. The same text is in the repository's <code>apps/control-plane/docs</code>.</p>
<dl>
${topics.join("\n")}
</dl>
<h2 id="api-explorers">API explorers</h2>
<ul>
${explorers.join("\n")}
</ul>`,
  );
}

export function docsRoutes(dir?: string) {
  return async (app: FastifyInstance) => {
    const docs = loadDocs(dir);
    const index = indexPage(docs.values());
    const pages = new Map([...docs].map(([topic, d]) => [topic, page(d.title, d.html)]));
    const send = (reply: FastifyReply, html: string) => reply.headers(PAGE_HEADERS).type("text/html; charset=utf-8").send(html);

    app.get("/docs", { schema: { hide: true, response: { 200: Html } } }, async (_request, reply) => send(reply, index));
    app.get<{ Params: { topic: string } }>(
      "/docs/:topic",
      { schema: { hide: true, params: TopicParams, response: { 200: Html, ...errors(404) } } },
      async (request, reply) => {
        const html = pages.get(request.params.topic);
        if (html === undefined) throw new DomainError("doc_not_found", `No doc is named "${request.params.topic}"; /docs lists them`);
        return send(reply, html);
      },
    );
  };
}
