// The stuck-deployment sweep (platform spec 3.1, 8): every 5 minutes, an operation still
// active 1800 s after it started (or was created, if it never started) fails with a timeout
// message, its environment goes to `error`, and an error log entry says why. A command
// still waiting in the outbox is withdrawn; one the agent already took is announced on
// the cancel channel, as a cancel would, so the agent stops at its next step boundary.
import type pg from "pg";
import type { Clock } from "../../../lib/clock.ts";
import { inTransaction } from "../../../db/transaction.ts";
import { appendLogs, type LogEntry } from "../../events/event-log.repo.ts";
import { failStuck, setEnvironmentsError, withdrawCommands } from "./stuck-sweep.repo.ts";

export const STUCK_SWEEP_QUEUE = "deployments.stuck-sweep";
export const STUCK_SWEEP_CRON = "*/5 * * * *";
export const DEPLOYMENT_TIMEOUT_SECONDS = 1800;
export const TIMEOUT_MESSAGE = "Deployment timed out after 30 minutes";

/** Fails every stuck operation; returns the ids it failed. */
export async function sweepStuckDeployments(deps: { pool: pg.Pool; clock: Clock }): Promise<string[]> {
  const now = deps.clock.now();
  return inTransaction(deps.pool, async (client) => {
    const rows = await failStuck(client, now, DEPLOYMENT_TIMEOUT_SECONDS, TIMEOUT_MESSAGE);
    if (rows.length > 0) {
      await withdrawCommands(client, rows.map((r) => r.id), now);
      await setEnvironmentsError(client, [...new Set(rows.map((r) => r.environment_id))], now);
      const byOrg = new Map<string, LogEntry[]>();
      for (const r of rows) {
        const entries = byOrg.get(r.organization_id) ?? [];
        entries.push({
          deploymentId: r.id,
          ts: now.toISOString(),
          level: "error",
          message: TIMEOUT_MESSAGE,
          step: r.current_step,
          data: { timeout_seconds: DEPLOYMENT_TIMEOUT_SECONDS, previous_status: r.previous_status, failed_by: "stuck-deployment sweep" },
        });
        byOrg.set(r.organization_id, entries);
      }
      for (const [org, entries] of byOrg) await appendLogs(client, org, entries);
    }
    return rows.map((r) => r.id);
  });
}
