// How long org_events are kept, and the maintenance task that prunes them. server.stats
// rows are a dashboard's short chart history; every other event type is kept a week.
// deployment_logs are a deployment's log history and stay with it (never pruned here).
import type pg from "pg";
import { pruneOrgEventsBefore } from "./event-log.repo.ts";

export const STATS_RETENTION_MS = 2 * 60 * 60 * 1000;
export const EVENT_RETENTION_MS = 7 * 24 * 60 * 60 * 1000;

export async function pruneOrgEvents(pool: pg.Pool, now: Date): Promise<number> {
  const stats = await pruneOrgEventsBefore(pool, new Date(now.getTime() - STATS_RETENTION_MS), "server.stats");
  return stats + (await pruneOrgEventsBefore(pool, new Date(now.getTime() - EVENT_RETENTION_MS)));
}
