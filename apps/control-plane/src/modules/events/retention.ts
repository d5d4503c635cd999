// How long org_events are kept, and the maintenance task that prunes them. server.stats
// rows are a dashboard's short chart history; every other event type is kept a week.
// deployment_logs are a deployment's log history and stay with it (never pruned here).
import type pg from "pg";

export const STATS_RETENTION_MS = 2 * 60 * 60 * 1000;
export const EVENT_RETENTION_MS = 7 * 24 * 60 * 60 * 1000;

/** Rows per delete statement, so one run never holds a long transaction (it would hold back every stream). */
const CHUNK = 5000;

export async function pruneOrgEvents(pool: pg.Pool, now: Date): Promise<number> {
  let removed = 0;
  const rounds: [string, Date][] = [
    ["type = 'server.stats' and created_at < $1", new Date(now.getTime() - STATS_RETENTION_MS)],
    ["created_at < $1", new Date(now.getTime() - EVENT_RETENTION_MS)],
  ];
  for (const [where, before] of rounds) {
    for (;;) {
      const { rowCount } = await pool.query(`delete from org_events where id in (select id from org_events where ${where} limit ${CHUNK})`, [before]);
      removed += rowCount ?? 0;
      if ((rowCount ?? 0) < CHUNK) break;
    }
  }
  return removed;
}
