// Reads of an environment's caught mail for both APIs: a page of summaries (newest first)
// and one message with its parts. What is past the retention rule is never shown.
import type { Clock } from "../../lib/clock.ts";
import type { CursorCodec } from "../../lib/cursor.ts";
import { notFound } from "../../lib/errors.ts";
import type { Scope } from "../../lib/scope.ts";
import { listPage, type PageRequest } from "../../db/keyset.ts";
import type { EnvironmentsRepo } from "../environments/environments.repo.ts";
import type { CaughtMailRow, MailsRepo } from "./mails.repo.ts";
import { mailExpiry } from "./mail-rules.ts";

export function mailSummaryView(row: CaughtMailRow) {
  return {
    id: row.id,
    from: row.from,
    to: row.to,
    subject: row.subject,
    received_at: row.receivedAt.toISOString(),
    size: row.size,
    attachments: row.attachments.map((a) => a.filename ?? ""),
  };
}

export function mailView(row: CaughtMailRow) {
  return {
    ...mailSummaryView(row),
    environment_id: row.environmentId,
    html: row.html,
    text: row.text,
    truncated: row.truncated,
    headers: row.headers,
    attachments: row.attachments,
  };
}

export function createMailsService(deps: { environments: Pick<EnvironmentsRepo, "get">; mails: MailsRepo; cursors: CursorCodec; clock: Clock }) {
  async function environment(scope: Scope, id: string) {
    const env = await deps.environments.get(scope, id);
    if (!env) throw notFound("Environment");
    return env;
  }
  return {
    async list(scope: Scope, environmentId: string, page: PageRequest) {
      const env = await environment(scope, environmentId);
      const expiry = mailExpiry(deps.clock.now());
      return listPage(deps.cursors, `mails:${env.id}`, page, (limit, after) => deps.mails.list(env.id, expiry, limit, after), (row) => mailSummaryView(row));
    },

    async get(scope: Scope, environmentId: string, mailId: string) {
      const env = await environment(scope, environmentId);
      const row = await deps.mails.get(env.id, mailId, mailExpiry(deps.clock.now()));
      if (!row) throw notFound("Mail");
      return mailView(row);
    },
  };
}
export type MailsService = ReturnType<typeof createMailsService>;
