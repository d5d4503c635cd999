// The audit log of commands support staff issue: who, when, what, on which target, why,
// and how it ended. A row is written before the command is attempted, so a command that
// is refused (environment busy, not running...) is still on record. The outcome is read
// from the linked command or operation when the entry is shown, so it is never stale; only
// a refusal, which has no command to link, is stored in `result`.
import { and, count, eq, sql, type SQL } from "drizzle-orm";
import { agentCommands, auditLog, deployments, environments, servers, users, type Database } from "@berth/db";
import type { CursorCodec } from "../../lib/cursor.ts";
import { listPage, newestFirst, olderThan, type PageRequest } from "../../db/keyset.ts";
import { commandOutcome, operationOutcome, type Outcome } from "./outcomes.ts";

export interface NewAuditEntry {
  organizationId: string;
  actorUserId: string;
  action: string;
  /** request: a portal administrator's platform API request (targetId "<METHOD> <path>"). */
  targetType: "environment" | "server" | "request";
  targetId: string;
  reason?: string | null;
  /** Known at once (a request already answered); otherwise it comes from the linked command or operation. */
  result?: { state: string; summary: string };
}

const entryColumns = {
  id: auditLog.id,
  organizationId: auditLog.organizationId,
  createdAt: auditLog.createdAt,
  action: auditLog.action,
  targetType: auditLog.targetType,
  targetId: auditLog.targetId,
  reason: auditLog.reason,
  commandId: auditLog.commandId,
  deploymentId: auditLog.deploymentId,
  stored: auditLog.result,
  actorId: users.id,
  actorEmail: users.email,
  actorName: users.name,
  targetName: sql<string | null>`coalesce(${environments.name}, ${servers.name})`,
  commandType: agentCommands.type,
  commandState: agentCommands.state,
  commandResult: agentCommands.result,
  commandError: agentCommands.error,
  operationKind: deployments.kind,
  operationStatus: deployments.status,
  operationError: deployments.errorMessage,
};

function selectEntries(db: Database) {
  return db
    .select(entryColumns)
    .from(auditLog)
    .leftJoin(users, eq(users.id, auditLog.actorUserId))
    .leftJoin(agentCommands, eq(agentCommands.commandId, auditLog.commandId))
    .leftJoin(deployments, eq(deployments.id, auditLog.deploymentId))
        // Names only of the entry's own organisation's objects.
    .leftJoin(
      environments,
      and(eq(auditLog.targetType, "environment"), sql`${environments.id}::text = ${auditLog.targetId}`, eq(environments.organizationId, auditLog.organizationId)),
    )
    .leftJoin(servers, and(eq(auditLog.targetType, "server"), sql`${servers.id}::text = ${auditLog.targetId}`, eq(servers.organizationId, auditLog.organizationId)));
}
export type AuditEntryRow = Awaited<ReturnType<typeof selectEntries>>[number];

export interface AuditEntryView {
  id: string;
  organization_id: string;
  created_at: string;
  actor: { id: string; email: string; name: string } | null;
  action: string;
  target: { type: string; id: string; name: string | null };
  reason: string | null;
  command_id: string | null;
  deployment_id: string | null;
  result: Outcome;
}

function outcomeOf(r: AuditEntryRow): Outcome & { output?: Record<string, unknown> | null } {
  const stored = r.stored as { state?: string; summary?: string } | null;
  if (stored?.state) return { state: stored.state, summary: stored.summary ?? stored.state };
  if (r.deploymentId && r.operationStatus && r.operationKind) return operationOutcome(r.operationKind, r.operationStatus, r.operationError);
  if (r.commandId && r.commandState && r.commandType) {
    const result = (r.commandResult as Record<string, unknown> | null) ?? null;
    return { ...commandOutcome(r.commandType, r.commandState, result, r.commandError as { code?: string; message?: string } | null), output: result };
  }
  return { state: "requested", summary: "Recorded; the command was not sent" };
}

export function auditEntryView(row: AuditEntryRow): AuditEntryView {
  const { output: _output, ...result } = outcomeOf(row);
  return {
    id: row.id,
    organization_id: row.organizationId,
    created_at: row.createdAt.toISOString(),
    actor: row.actorId ? { id: row.actorId, email: row.actorEmail ?? "", name: row.actorName ?? "" } : null,
    action: row.action,
    target: { type: row.targetType, id: row.targetId, name: row.targetName ?? null },
    reason: row.reason,
    command_id: row.commandId,
    deployment_id: row.deploymentId,
    result,
  };
}

/** The entry with what the command produced (the log lines of logs.tail, the diagnostics report). */
export function auditEntryDetail(row: AuditEntryRow) {
  return { ...auditEntryView(row), output: outcomeOf(row).output ?? null };
}

export function createAuditLogRepo(deps: { db: Database; cursors: CursorCodec }) {
  const { db } = deps;
  const select = () => selectEntries(db);

  return {
    async record(entry: NewAuditEntry): Promise<string> {
      const [row] = await db.insert(auditLog).values(entry).returning({ id: auditLog.id });
      return row!.id;
    },

    /** Links the entry to what was sent: the agent command, or the operation that carries it. */
    async link(id: string, link: { commandId?: string | null; deploymentId?: string | null }) {
      await db
        .update(auditLog)
        .set({ commandId: link.commandId ?? null, deploymentId: link.deploymentId ?? null })
        .where(eq(auditLog.id, id));
    },

    /** The command was not sent: why, as the entry's result. */
    async refused(id: string, code: string, message: string) {
      await db.update(auditLog).set({ result: { state: "refused", summary: message, code } }).where(eq(auditLog.id, id));
    },

    async get(id: string, organizationId?: string) {
      const where: SQL[] = [eq(auditLog.id, id)];
      if (organizationId) where.push(eq(auditLog.organizationId, organizationId));
      const [row] = await select().where(and(...where));
      return row;
    },

    async byCommand(commandId: string) {
      const [row] = await select().where(eq(auditLog.commandId, commandId)).limit(1);
      return row;
    },

    /** Newest first; one organisation's, or (organizationId null) every organisation's. */
    list(organizationId: string | null, page: PageRequest) {
      const scope = organizationId ? eq(auditLog.organizationId, organizationId) : undefined;
      return listPage(
        deps.cursors,
        `audit:${organizationId ?? "all"}`,
        page,
        async (limit, after) => {
          const rows = await select()
            .where(and(scope, olderThan(auditLog.createdAt, auditLog.id, after)))
            .orderBy(...newestFirst(auditLog.createdAt, auditLog.id))
            .limit(limit + 1);
          const [total] = await db.select({ n: count() }).from(auditLog).where(scope);
          return { rows, total: total?.n ?? 0 };
        },
        auditEntryView,
      );
    },
  };
}
export type AuditLogRepo = ReturnType<typeof createAuditLogRepo>;
