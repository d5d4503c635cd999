// The OpenAPI 3.1 document of the public API, generated from the route schemas, and the
// two explorers (Swagger UI and Redoc), all served locally: no CDN.
import { createRequire } from "node:module";
import { createReadStream } from "node:fs";
import swagger from "@fastify/swagger";
import swaggerUi from "@fastify/swagger-ui";
import type { FastifyInstance, FastifySchema } from "fastify";
import { errorBodyRef } from "../lib/http-schemas.ts";
import { OPERATION_IDS } from "./operation-ids.ts";
import { REQUEST_EXAMPLES } from "./request-examples.ts";

export const PUBLIC_PREFIX = "/api/public/v1";
const PLATFORM_PREFIX = "/api/v1";
const require = createRequire(import.meta.url);

type Doc = { paths?: Record<string, unknown> } & Record<string, unknown>;

/** Keeps only one API's paths, relative to its server URL. */
function documentFor(doc: Doc, prefix: string, extra: Record<string, unknown> = {}): Doc {
  const paths: Record<string, unknown> = {};
  for (const [p, v] of Object.entries(doc.paths ?? {})) {
    if (p.startsWith(`${prefix}/`)) paths[p.slice(prefix.length)] = v;
  }
  return { ...doc, ...extra, servers: [{ url: prefix }], paths };
}
const publicDocument = (doc: Doc) => documentFor(doc, PUBLIC_PREFIX);

/** The platform API (session tokens): same generator, its own title and security scheme. */
const platformDocument = (doc: Doc) =>
  documentFor(doc, PLATFORM_PREFIX, {
    info: {
      title: "Berth platform API",
      version: "v1",
      description:
        "Session-token interface for people and the dashboard: sign-in, members, the deployment lifecycle, backups, live events (SSE) and the git push hook. " +
        "Sign in with POST /auth/login and send `Authorization: Bearer <token>`. Errors have the body `{error, message}`; permission failures are 403 with the message " +
        "\"You don't have permission to <action>.\"; resources the caller cannot see are 404. Deployment and heavy operations are limited to 10 per minute per organisation " +
        "(X-RateLimit-Limit / -Remaining / -Window, Retry-After on 429).",
    },
    components: { ...(doc.components as object), securitySchemes: { session: { type: "http", scheme: "bearer", description: "bst_… session token from POST /auth/login" } } },
    security: [{ session: [] }],
  });

const BODY_METHODS = new Set(["POST", "PUT", "PATCH", "DELETE"]);

/**
 * Every operation that may carry a body documents the 415 `unsupported_media_type` its
 * routes answer to a body that is not JSON (app.ts removes every other parser).
 */
function withMediaTypeError(schema: FastifySchema, methods: string[]): FastifySchema {
  if (!methods.some((m) => BODY_METHODS.has(m))) return schema;
  const response = { ...((schema.response as Record<string, unknown> | undefined) ?? {}) };
  response["415"] ??= errorBodyRef(415);
  return { ...schema, response };
}

/**
 * A query parameter with a default is not required of the client (the server fills it in):
 * the route's schema lists it as required for its handler's sake, the document must not.
 */
function withOptionalDefaults(schema: FastifySchema): FastifySchema {
  const q = schema.querystring as { properties?: Record<string, { default?: unknown }>; required?: string[] } | undefined;
  if (!q?.required || !q.properties) return schema;
  const required = q.required.filter((name) => q.properties![name]?.default === undefined);
  return required.length === q.required.length ? schema : { ...schema, querystring: { ...q, required } };
}

/** Which API a route belongs to and its "METHOD /path" as that API's document shows it. */
function operationKey(method: string, url: string): { api: "public" | "platform"; key: string } | null {
  const api = url.startsWith(`${PUBLIC_PREFIX}/`) ? "public" : url.startsWith(`${PLATFORM_PREFIX}/`) ? "platform" : null;
  if (api === null) return null;
  const path = url.slice(api === "public" ? PUBLIC_PREFIX.length : PLATFORM_PREFIX.length).replace(/:([A-Za-z0-9_]+)/g, "{$1}");
  return { api, key: `${method} ${path}` };
}

/**
 * What every documented operation gets beyond its route's own schema: its name
 * (operation-ids.ts), an example body (request-examples.ts) and the 415 of body methods.
 */
function documented({ schema, url, route }: { schema: FastifySchema; url: string; route: { method: string | string[] } }) {
  if (!schema || (schema as { hide?: boolean }).hide) return { schema, url };
  const methods = ([] as string[]).concat(route.method);
  const op = methods.length === 1 ? operationKey(methods[0]!, url) : null;
  const operationId = op ? (OPERATION_IDS[op.api] as Record<string, string>)[op.key] : undefined;
  const example = op ? (REQUEST_EXAMPLES[op.api] as Record<string, unknown>)[op.key] : undefined;
  const out: FastifySchema & { operationId?: string } = withOptionalDefaults(withMediaTypeError(schema, methods));
  return {
    schema: {
      ...out,
      ...(operationId ? { operationId } : {}),
      // @fastify/swagger moves a body schema's single `examples` entry to the media type's `example`.
      ...(example !== undefined && out.body ? { body: { ...(out.body as object), examples: [example] } } : {}),
    },
    url,
  };
}

/** Registers the generator; must run before the routes are added. */
export async function registerOpenApi(app: FastifyInstance): Promise<void> {
  await app.register(swagger, {
    openapi: {
      openapi: "3.1.0",
      info: {
        title: "Berth public API",
        version: "v1",
        description:
          "API-key interface for automation: projects, servers, environments, deployment actions and task polling. " +
          "Every request carries `Authorization: Bearer <API_KEY>`. Errors have the body `{error, message}` with a stable code. " +
          "Responses carry X-RateLimit-Limit / -Remaining / -Window. POST requests accept X-Idempotency-Key (action endpoints also Idempotency-Key).",
      },
      components: { securitySchemes: { apiKey: { type: "http", scheme: "bearer", description: "svc_live_ro_… or svc_live_rw_…" } } },
      security: [{ apiKey: [] }],
    },
    refResolver: { buildLocalReference: (json, _base, _fragment, i) => String(json.$id ?? `def-${i}`) },
    transform: documented,
  });
}

/** The document and explorers, outside the authenticated scope. */
export async function openApiRoutes(app: FastifyInstance): Promise<void> {
  app.get(`${PUBLIC_PREFIX}/openapi.json`, { schema: { hide: true } }, async () => publicDocument(app.swagger() as unknown as Doc));
  app.get(`${PLATFORM_PREFIX}/openapi.json`, { schema: { hide: true } }, async () => platformDocument(app.swagger() as unknown as Doc));

  await app.register(swaggerUi, {
    routePrefix: `${PUBLIC_PREFIX}/docs`,
    transformSpecification: (spec) => publicDocument(spec as Doc),
    uiConfig: { deepLinking: true },
  });

  const redocBundle = require.resolve("redoc/bundles/redoc.standalone.js");
  app.get(`${PUBLIC_PREFIX}/redoc/redoc.standalone.js`, { schema: { hide: true } }, async (_req, reply) =>
    reply.type("application/javascript").header("cache-control", "public, max-age=86400").send(createReadStream(redocBundle)),
  );
  app.get(`${PUBLIC_PREFIX}/redoc`, { schema: { hide: true } }, async (_req, reply) =>
    reply.type("text/html").send(`<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>Berth public API v1</title>
<meta name="viewport" content="width=device-width, initial-scale=1"></head>
<body><redoc spec-url="${PUBLIC_PREFIX}/openapi.json"></redoc>
<script src="${PUBLIC_PREFIX}/redoc/redoc.standalone.js"></script></body></html>`),
  );
}
