// What the dispatcher reads and repairs: an operation's environment and project (for the
// command's parameters), operations still waiting without a command, and operations whose
// command expired or was refused.
import { and, eq, inArray, isNull, sql } from "drizzle-orm";
import { agentCommands, deployments, environments, projects, type Database } from "@berth/db";
import { WAITING_STATUSES } from "./deployment-state.ts";
import type { DeploymentRow } from "./deployments.repo.ts";

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
        .limit(limit);
      return rows.map((r) => r.d);
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
