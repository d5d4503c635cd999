// Serves the dashboard: the page at `/` and its assets at `/assets/*` (its own modules and
// styles, plus uPlot and openapi-fetch from node_modules), read once at start. No CDN, no
// build step.
import { createHash } from "node:crypto";
import { readdirSync, readFileSync } from "node:fs";
import { createRequire } from "node:module";
import path from "node:path";
import type { FastifyInstance, FastifyReply, FastifyRequest } from "fastify";

const PUBLIC_DIR = path.join(import.meta.dirname, "public");
const TYPES: Record<string, string> = {
  ".html": "text/html; charset=utf-8",
  ".js": "text/javascript; charset=utf-8",
  ".mjs": "text/javascript; charset=utf-8",
  ".css": "text/css; charset=utf-8",
  ".svg": "image/svg+xml",
};

interface Asset {
  body: Buffer;
  type: string;
  etag: string;
}

function asset(file: string, body: Buffer = readFileSync(file)): Asset {
  return { body, type: TYPES[path.extname(file)] ?? "application/octet-stream", etag: `"${createHash("sha256").update(body).digest("base64url").slice(0, 22)}"` };
}

function loadAssets(): Map<string, Asset> {
  const assets = new Map<string, Asset>();
  for (const name of readdirSync(PUBLIC_DIR)) if (name !== "index.html") assets.set(name, asset(path.join(PUBLIC_DIR, name)));
  const require = createRequire(import.meta.url);
  const uplotDir = path.dirname(require.resolve("uplot/dist/uPlot.iife.min.js"));
  assets.set("uPlot.iife.min.js", asset(path.join(uplotDir, "uPlot.iife.min.js")));
  assets.set("uPlot.min.css", asset(path.join(uplotDir, "uPlot.min.css")));
  // The requests of api.js (the dashboard's client of the platform API): openapi-fetch's ES
  // module has no imports, so the browser loads it as it is (less the source map comment: the map is not served).
  const openapiFetch = require.resolve("openapi-fetch/dist/index.mjs");
  const source = readFileSync(openapiFetch, "utf8").replace(/\n\/\/# sourceMappingURL=\S+\s*$/, "\n");
  assets.set("vendor/openapi-fetch.js", asset(openapiFetch, Buffer.from(source)));
  return assets;
}

function send(request: FastifyRequest, reply: FastifyReply, a: Asset) {
  // Revalidated on every load (ETag), so a new release is picked up without a hard reload.
  reply.header("cache-control", "no-cache").header("etag", a.etag).header("x-content-type-options", "nosniff");
  if (request.headers["if-none-match"] === a.etag) return reply.code(304).send();
  return reply.type(a.type).send(a.body);
}

export function dashboardRoutes() {
  return async (app: FastifyInstance) => {
    const index = asset(path.join(PUBLIC_DIR, "index.html"));
    const assets = loadAssets();
    const pageHeaders = {
      // Everything the page loads comes from here; the API is same-origin too.
      "content-security-policy": "default-src 'self'; img-src 'self' data:; style-src 'self'; frame-ancestors 'none'",
      "referrer-policy": "no-referrer",
    };
    app.get("/", { schema: { hide: true } }, async (request, reply) => send(request, reply.headers(pageHeaders), index));
    app.get<{ Params: { "*": string } }>("/assets/*", { schema: { hide: true } }, async (request, reply) => {
      const a = assets.get(request.params["*"]);
      if (!a) return reply.code(404).send({ error: "not_found", message: "No such asset", request_id: request.id });
      return send(request, reply, a);
    });
  };
}
