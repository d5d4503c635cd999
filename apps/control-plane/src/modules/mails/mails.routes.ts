// Routes of an environment's caught mail: the public API's (API keys) and the platform API's
// (sessions, for the dashboard). Read only: the mail of staging and development ERPs, caught
// on their server and reported by its agent, so it answers while the server is offline.
import { Type } from "typebox";
import type { FastifyPluginAsyncTypebox } from "@fastify/type-provider-typebox";
import { MAX_CAUGHT_MAIL_BYTES, MAX_CAUGHT_PART_LENGTH } from "@berth/protocol";
import { errors, IdParams, Nullable, Page, PageQuery, Timestamp, Uuid } from "../../lib/http-schemas.ts";
import type { Scope } from "../../lib/scope.ts";
import { scopeOf } from "../api-keys/key-principal.ts";
import { personOf } from "../auth/session-principal.ts";
import type { DeploymentsService } from "../deployments/operations/operations.service.ts";
import { MAIL_RETENTION_DAYS, MAX_MAILS_PER_ENVIRONMENT } from "./mail-rules.ts";
import type { MailsService } from "./mails.service.ts";

const ABOUT =
  `Staging and development ERPs never reach a real mail server: what they send goes to their server's mail catcher, which accepts only ` +
  `the environment's own login and messages of at most ${MAX_CAUGHT_MAIL_BYTES / 1024 / 1024} MiB, and delivers nothing. ` +
  `Mail is kept ${MAIL_RETENTION_DAYS} days, at most ${MAX_MAILS_PER_ENVIRONMENT} messages per environment (the oldest go first). ` +
  "Production environments are not wired to the catcher: their box stays empty.";

const summary = {
  id: Uuid,
  from: Type.String({ description: "The From header (the envelope's sender when it has none)" }),
  to: Type.Array(Type.String(), { description: "The envelope's recipients: where the ERP asked the mail to go" }),
  subject: Type.String(),
  received_at: Timestamp,
  size: Type.Integer({ description: "The message's size in bytes, as received" }),
};
const MailSummary = Type.Object(
  { ...summary, attachments: Type.Array(Type.String(), { description: "The attachments' file names (\"\" for one without a name)" }) },
  { title: "CaughtMailSummary" },
);
const Mail = Type.Object(
  {
    ...summary,
    environment_id: Uuid,
    html: Nullable(Type.String({ description: "The HTML part as sent (null: none). Render it sandboxed: it is the ERP's, scripts included" })),
    text: Nullable(Type.String({ description: "The text part as sent (null: none)" })),
    truncated: Type.Boolean({ description: `The HTML or text part was cut to ${MAX_CAUGHT_PART_LENGTH / 1024} Ki characters` }),
    headers: Type.Array(Type.Object({ name: Type.String(), value: Type.String() }), { description: "In the message's order (at most 100)" }),
    attachments: Type.Array(
      Type.Object({ filename: Nullable(Type.String()), content_type: Type.String(), size: Type.Integer({ description: "Bytes, decoded" }) }),
      { description: "Names, types and sizes; the contents are not kept" },
    ),
  },
  { title: "CaughtMail" },
);

function mailRoutes(
  service: MailsService,
  base: string,
  params: ReturnType<typeof Type.Object>,
  scope: (request: { params: Record<string, string> }) => Promise<{ scope: Scope; environmentId: string }>,
  needs: string,
): FastifyPluginAsyncTypebox {
  const withMail = Type.Object({ ...params.properties, mail_id: Uuid });
  return async (app) => {
    app.get(
      `${base}/mails`,
      {
        schema: {
          tags: ["Environments"],
          summary: "List an environment's caught mail",
          description: `Newest first, a page at a time (pass pagination.next_cursor as \`cursor\`). ${ABOUT} ${needs}`,
          params,
          querystring: PageQuery,
          response: { 200: Page(MailSummary), ...errors(404) },
        },
      },
      async (request) => {
        const at = await scope(request as never);
        return service.list(at.scope, at.environmentId, request.query as { limit: number; cursor?: string });
      },
    );

    app.get(
      `${base}/mails/:mail_id`,
      {
        schema: {
          tags: ["Environments"],
          summary: "Get one caught mail",
          description: `Its HTML and text parts, headers, and attachments' names, types and sizes. 404 when the environment has no such mail (or it expired). ${needs}`,
          params: withMail,
          response: { 200: Mail, ...errors(404) },
        },
      },
      async (request) => {
        const at = await scope(request as never);
        return service.get(at.scope, at.environmentId, (request.params as { mail_id: string }).mail_id);
      },
    );
  };
}

/** /api/public/v1/environments/{id}/mails: any key of the environment's organisation or project. */
export function mailsPublicRoutes(service: MailsService): FastifyPluginAsyncTypebox {
  return mailRoutes(service, "/environments/:id", IdParams, async (request) => ({ scope: scopeOf(request as never), environmentId: request.params.id! }), "Any key of the environment's organisation or project.");
}

/** /api/v1/environments/{env_id}/mails: project.deployments.view (every project member). */
export function mailsPlatformRoutes(deps: { mails: MailsService; environments: Pick<DeploymentsService, "environmentScope"> }): FastifyPluginAsyncTypebox {
  return mailRoutes(
    deps.mails,
    "/environments/:env_id",
    Type.Object({ env_id: Uuid }),
    async (request) => ({
      scope: await deps.environments.environmentScope(personOf(request as never), request.params.env_id!, "project.deployments.view"),
      environmentId: request.params.env_id!,
    }),
    "Needs project.deployments.view (every project member).",
  );
}
