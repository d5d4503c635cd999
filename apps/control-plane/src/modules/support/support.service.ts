// The support console: find any organisation, server or environment; see a server's agent
// and its recent commands; act on it through the same paths customers use. Environment
// operations are ordinary operation rows (one active per environment, dispatched as signed
// commands); logs.tail and diagnostics are signed commands of their own. Nothing here can
// carry a shell string: the command types are the protocol's, and each maps to fixed
// Docker calls on the agent. Every command is written to the audit log first.
import { DomainError, notFound } from "../../lib/errors.ts";
import type { AgentCommands } from "../agents/agent-commands.ts";
import type { BackupsService } from "../backups/backups.service.ts";
import type { DeploymentsService } from "../deployments/operations/operations.service.ts";
import { STALE_AFTER_SECONDS } from "../servers/servers.repo.ts";
import { usageView } from "../servers/servers.routes.ts";
import { auditEntryView, type AuditLogRepo } from "./audit-log.repo.ts";
import { commandOutcome } from "./outcomes.ts";
import type { CommandRow, SupportRepo } from "./support.repo.ts";

export const SUPPORT_COMMANDS = ["restart", "stop", "start", "redeploy", "backup", "logs.tail", "diagnostics"] as const;
export type SupportCommand = (typeof SUPPORT_COMMANDS)[number];
const ENVIRONMENT_COMMANDS: readonly SupportCommand[] = ["restart", "stop", "start", "redeploy", "backup", "logs.tail"];
export const DEFAULT_TAIL_LINES = 200;
/** A read-only command that nobody took within this long is of no use to the person waiting. */
export const DIRECT_COMMAND_TTL_MS = 5 * 60 * 1000;
const RECENT_COMMANDS = 50;
const SEARCH_LIMIT = 20;

export interface IssueRequest {
  type: SupportCommand;
  environment_id?: string | undefined;
  lines?: number | undefined;
  reason: string;
}

const iso = (d: Date | null | undefined) => (d ? d.toISOString() : null);

/**
 * Checks a request before anything is recorded: a reason of at least 5 characters, an
 * environment for the environment commands and none for the server's, lines for
 * logs.tail only. Returns the trimmed reason and whether the target is an environment.
 */
export function checkRequest(req: IssueRequest): { reason: string; needsEnvironment: boolean } {
  const reason = req.reason.trim();
  if (reason.length < 5) throw new DomainError("validation_error", "Give a reason of at least 5 characters", [{ path: "body/reason", message: "must not be blank" }]);
  const needsEnvironment = ENVIRONMENT_COMMANDS.includes(req.type);
  if (needsEnvironment && !req.environment_id) {
    throw new DomainError("validation_error", `environment_id is required for ${req.type}`, [{ path: "body/environment_id", message: "is required" }]);
  }
  if (!needsEnvironment && req.environment_id) {
    throw new DomainError("validation_error", `${req.type} applies to the server; leave environment_id out`, [{ path: "body/environment_id", message: "not allowed" }]);
  }
  if (req.lines !== undefined && req.type !== "logs.tail") {
    throw new DomainError("validation_error", "lines applies to logs.tail only", [{ path: "body/lines", message: "not allowed" }]);
  }
  return { reason, needsEnvironment };
}

/** An agent's state as the console shows it: never enrolled, or connected with a fresh heartbeat, or not. */
export function agentState(enrolled: boolean, connected: boolean, fresh: boolean): "pending" | "online" | "offline" {
  return !enrolled ? "pending" : connected && fresh ? "online" : "offline";
}

export function commandView(c: CommandRow) {
  const result = (c.result as Record<string, unknown> | null) ?? null;
  const error = (c.error as { code?: string; message?: string } | null) ?? null;
  return {
    command_id: c.commandId,
    seq: c.seq,
    type: c.type,
    state: c.state,
    issued_by: c.issuedBy,
    deployment_id: c.deploymentId,
    created_at: c.createdAt.toISOString(),
    accepted_at: iso(c.acceptedAt),
    completed_at: iso(c.completedAt),
    summary: commandOutcome(c.type, c.state, result, error).summary,
    error: error ? { code: error.code ?? "error", message: error.message ?? "" } : null,
  };
}

export function createSupport(deps: {
  repo: SupportRepo;
  audit: AuditLogRepo;
  commands: AgentCommands;
  deployments: Pick<DeploymentsService, "requestAction">;
  backups: Pick<BackupsService, "create">;
}) {
  const { repo, audit } = deps;

  async function serverRow(serverId: string) {
    const row = await repo.serverWithOrganization(serverId);
    if (!row) throw notFound("Server");
    return row;
  }

  return {
    async search(q: string) {
      const needle = `%${q.trim().replace(/[\\%_]/g, (c) => `\\${c}`)}%`;
      const orgs = await repo.organizationsLike(needle, SEARCH_LIMIT);
      const srv = await repo.serversLike(needle, SEARCH_LIMIT);
      const envs = await repo.environmentsLike(needle, SEARCH_LIMIT);
      return { organizations: orgs, servers: srv, environments: envs };
    },

    async server(serverId: string) {
      const { server: s, organization } = await serverRow(serverId);
      const session = await repo.agentSession(serverId, s.lastSeenAt, STALE_AFTER_SECONDS);
      const connectedAt = session?.connected_at ? new Date(session.connected_at) : null;
      const state = agentState(s.enrolledAt !== null, connectedAt !== null, session?.fresh === true);
      const stats = await repo.stats(serverId);
      const envs = await repo.environmentsOn(serverId);
      const recent = await repo.recentCommands(serverId, RECENT_COMMANDS);
      return {
        id: s.id,
        name: s.name,
        hostname: s.hostname,
        provider: s.provider,
        region: s.region,
        created_at: s.createdAt.toISOString(),
        deleted_at: iso(s.deletedAt),
        organization,
        agent: {
          state,
          connected_at: iso(connectedAt),
          last_seen_at: iso(s.lastSeenAt),
          enrolled_at: iso(s.enrolledAt),
          agent_version: s.agentVersion,
          os: s.os,
          arch: s.arch,
          docker_version: s.dockerVersion,
        },
        stats: stats ? usageView(stats) : null,
        environments: envs,
        recent_commands: recent.map(commandView),
      };
    },

    /**
     * Records the request in the audit log, then issues it. A refusal (404 environment, 409
     * busy or not running, ...) is recorded as the entry's result and then returned to the
     * caller as usual.
     */
    async issue(userId: string, serverId: string, req: IssueRequest) {
      const { reason, needsEnvironment } = checkRequest(req);
      const { server } = await serverRow(serverId);
      const organizationId = server.organizationId;
      const auditId = await audit.record({
        organizationId,
        actorUserId: userId,
        action: `support.${req.type}`,
        targetType: needsEnvironment ? "environment" : "server",
        targetId: needsEnvironment ? req.environment_id! : serverId,
        reason,
      });
      try {
        if (server.deletedAt) throw notFound("Server");
        const link = await this.send(userId, organizationId, serverId, req);
        await audit.link(auditId, link);
        return { audit_entry_id: auditId, command_id: link.commandId ?? null, deployment_id: link.deploymentId ?? null };
      } catch (err) {
        const e = err instanceof DomainError ? err : new DomainError("internal_error", "The command could not be issued");
        await audit.refused(auditId, e.code, e.message).catch(() => {});
        throw err;
      }
    },

    async send(userId: string, organizationId: string, serverId: string, req: IssueRequest): Promise<{ commandId?: string | null; deploymentId?: string | null }> {
      const scope = { organizationId, projectId: null };
      const actor = { userId, apiKeyId: null };
      if (req.environment_id && !(await repo.environmentOnServer(req.environment_id, organizationId, serverId))) {
        throw new DomainError("not_found", "Environment not found on this server");
      }
      switch (req.type) {
        case "restart":
        case "stop":
        case "start":
        case "redeploy": {
          const op = await deps.deployments.requestAction(scope, req.environment_id!, req.type, actor);
          return { deploymentId: op.id, commandId: await repo.commandOfOperation(op.id) };
        }
        case "backup": {
          const { op } = await deps.backups.create(scope, req.environment_id!, { backup_type: "manual", comment: `Support: ${req.reason.trim()}`.slice(0, 500) }, actor);
          return { deploymentId: op.id, commandId: await repo.commandOfOperation(op.id) };
        }
        case "logs.tail": {
          const cmd = await deps.commands.issue({
            organizationId,
            serverId,
            type: "logs.tail",
            params: { environment_id: req.environment_id!, lines: req.lines ?? DEFAULT_TAIL_LINES },
            issuedBy: `user:${userId}`,
            ttlMs: DIRECT_COMMAND_TTL_MS,
          });
          return { commandId: cmd.commandId };
        }
        case "diagnostics": {
          const cmd = await deps.commands.issue({ organizationId, serverId, type: "diagnostics", params: {}, issuedBy: `user:${userId}`, ttlMs: DIRECT_COMMAND_TTL_MS });
          return { commandId: cmd.commandId };
        }
      }
    },

    async command(commandId: string) {
      const c = await repo.command(commandId);
      if (!c) throw notFound("Command");
      const entry = await audit.byCommand(commandId);
      return {
        ...commandView(c.command),
        server_id: c.command.serverId,
        organization_id: c.organizationId,
        // Only what the command's allow-list shows (agents/shown-params.ts), as stored at issue.
        params: (c.command.shownParams as Record<string, unknown> | null) ?? {},
        expires_at: c.command.expiresAt.toISOString(),
        result: (c.command.result as Record<string, unknown> | null) ?? null,
        audit_entry: entry ? auditEntryView(entry) : null,
      };
    },
  };
}
export type Support = ReturnType<typeof createSupport>;
