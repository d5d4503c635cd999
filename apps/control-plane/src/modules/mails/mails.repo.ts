// SQL of caught mail: written inside the agents' event ingest (caught-mails.ts), read by the
// APIs newest first, and trimmed to the retention rule (mail-rules.ts).
import { and, count, eq, gt, sql } from "drizzle-orm";
import type pg from "pg";
import { caughtMails, type Database } from "@berth/db";
import type { MailCaughtEvent } from "@berth/protocol";
import type { CursorPosition } from "../../lib/cursor.ts";
import { newestFirst, olderThan } from "../../db/keyset.ts";
import { MAX_MAILS_PER_ENVIRONMENT } from "./mail-rules.ts";
import { deleteInChunks } from "../../db/chunked-delete.ts";

export type CaughtMailRow = typeof caughtMails.$inferSelect;
type Client = Pick<pg.PoolClient, "query">;

/** Of these environments, those on `serverId`: the only ones its agent may file mail for. */
export async function environmentsOnServer(client: Client, serverId: string, ids: string[]): Promise<Map<string, string>> {
  const { rows } = await client.query<{ id: string; organization_id: string }>(
    "select id, organization_id from environments where id = any($1::uuid[]) and server_id = $2",
    [ids, serverId],
  );
  return new Map(rows.map((r) => [r.id, r.organization_id]));
}

/** Stores each mail once (a resent event finds its row). PostgreSQL keeps no NUL in text: it becomes U+FFFD. */
export async function insertCaughtMails(client: Client, mails: { organizationId: string; e: MailCaughtEvent }[]): Promise<void> {
  const clean = (s: string) => (s.includes("\0") ? s.replaceAll("\0", "\ufffd") : s);
  for (const { organizationId, e } of mails) {
    await client.query(
      `insert into caught_mails (id, organization_id, environment_id, received_at, "from", "to", subject, size, html, text, truncated, headers, attachments)
       values ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13) on conflict (id) do nothing`,
      [
        e.mail_id,
        organizationId,
        e.environment_id,
        e.received_at,
        clean(e.from),
        e.to.map(clean),
        clean(e.subject),
        e.size,
        e.html === null ? null : clean(e.html),
        e.text === null ? null : clean(e.text),
        e.truncated,
        clean(JSON.stringify(e.headers)),
        clean(JSON.stringify(e.attachments)),
      ],
    );
  }
}

/** Expired mail of every environment, `chunk` rows at a time (the retention job's, for boxes no new mail trims). */
export async function deleteExpiredMails(client: Client, expiry: Date, chunk: number): Promise<number> {
  return deleteInChunks(client, "delete from caught_mails where id = any(array(select id from caught_mails where received_at < $1 limit $2))", [expiry, chunk], chunk);
}

/** Deletes the environments' expired mail and, past the cap, their oldest. */
export async function trimCaughtMails(client: Client, environmentIds: string[], expiry: Date): Promise<void> {
  await client.query(
    `delete from caught_mails m using (
       select id, received_at < $2 as expired,
              row_number() over (partition by environment_id order by received_at desc, id desc) as n
       from caught_mails where environment_id = any($1::uuid[])
     ) ranked
     where m.id = ranked.id and (ranked.expired or ranked.n > $3)`,
    [environmentIds, expiry, MAX_MAILS_PER_ENVIRONMENT],
  );
}

export function createMailsRepo(db: Database) {
  return {
    /** The environment's unexpired mail, newest first (received_at as the keyset's created_at). */
    async list(environmentId: string, expiry: Date, limit: number, after: CursorPosition | undefined) {
      const where = and(eq(caughtMails.environmentId, environmentId), gt(caughtMails.receivedAt, expiry));
      const rows = await db
        .select()
        .from(caughtMails)
        .where(and(where, olderThan(caughtMails.receivedAt, caughtMails.id, after)))
        .orderBy(...newestFirst(caughtMails.receivedAt, caughtMails.id))
        .limit(limit + 1);
      const [total] = await db.select({ n: count() }).from(caughtMails).where(where);
      return { rows: rows.map((r) => ({ ...r, createdAt: r.receivedAt })), total: total?.n ?? 0 };
    },

    async get(environmentId: string, id: string, expiry: Date): Promise<CaughtMailRow | undefined> {
      const [row] = await db
        .select()
        .from(caughtMails)
        .where(and(eq(caughtMails.id, id), eq(caughtMails.environmentId, environmentId), sql`${caughtMails.receivedAt} > ${expiry.toISOString()}::timestamptz`));
      return row;
    },
  };
}
export type MailsRepo = ReturnType<typeof createMailsRepo>;
