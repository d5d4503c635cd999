// What the dispatcher reads and repairs: an operation's environment and project (for the
// command's parameters), operations still waiting without a command, operations whose
// command could not be built, and operations whose command expired or was refused.
import { and, asc, eq, inArray, isNull, sql } from "drizzle-orm";
import { agentCommands, deployments, environments, projects, type Database } from "@berth/db";
import { appendLogs } from "../../events/event-log.repo.ts";
import { WAITING_STATUSES } from "../operations/deployment-state.ts";
import type { DeploymentRow } from "../operations/operations.repo.ts";

export function createDispatchRepo(db: Database) {
  return {
    async environmentWithProject(environmentId: string) {
      const [row] = await db
        .select({ env: environments, project: projects })
        .from(environments)
        .innerJoin(projects, eq(projects.id, environments.projectId))
        .where(eq(environments.id, environmentId));
      return row;
    },

    /** Waiting operations that have no command yet (a crash between write and dispatch). */
    async waitingWithoutCommand(limit: number): Promise<DeploymentRow[]> {
      const rows = await db
        .select({ d: deployments })
        .from(deployments)
        .leftJoin(agentCommands, eq(agentCommands.deploymentId, deployments.id))
        .where(and(inArray(deployments.status, [...WAITING_STATUSES]), isNull(agentCommands.commandId)))
        .orderBy(asc(deployments.createdAt), asc(deployments.id))
        .limit(limit);
      return rows.map((r) => r.d);
    },

    /**
     * A waiting operation whose command could not be built fails (a deployment.status event,
     * as any status change), with an error line saying why; one no longer waiting is left alone.
     */
    async failUnbuilt(d: Pick<DeploymentRow, "id" | "organizationId" | "currentStep">, now: Date, message: string, code: string): Promise<boolean> {
      const failed = await db
        .update(deployments)
        .set({ status: "failed", completedAt: now, errorMessage: message })
        .where(and(eq(deployments.id, d.id), inArray(deployments.status, [...WAITING_STATUSES])))
        .returning({ id: deployments.id });
      if (failed.length === 0) return false;
      await appendLogs(db.$client, d.organizationId, [
        { deploymentId: d.id, ts: now.toISOString(), level: "error", message, step: d.currentStep, data: { code, failed_by: "dispatcher" } },
      ]);
      return true;
    },

    /** Commands still pending past their expiry become expired; waiting operations whose command expired or was refused fail. */
    async failUndelivered(now: Date, ttlMinutes: number): Promise<string[]> {
      await db
        .update(agentCommands)
        .set({ state: "expired", completedAt: now })
        .where(and(eq(agentCommands.state, "pending"), sql`${agentCommands.expiresAt} <= ${now.toISOString()}::timestamptz`));
      const { rows } = await db.execute<{ id: string }>(sql`
        update deployments d set status = 'failed', completed_at = ${now.toISOString()}::timestamptz,
          error_message = case c.state
            when 'expired' then 'The server was offline: its agent did not connect within ' || ${ttlMinutes} || ' minutes, so the task timed out before it started'
            else 'The agent refused the command (' || coalesce(c.rejection_code, 'unknown reason') || ')' end
        from agent_commands c
        where c.deployment_id = d.id and c.state in ('expired', 'rejected') and d.status in ${[...WAITING_STATUSES]}
        returning d.id`);
      return rows.map((r) => r.id);
    },
  };
}
export type DispatchRepo = ReturnType<typeof createDispatchRepo>;
