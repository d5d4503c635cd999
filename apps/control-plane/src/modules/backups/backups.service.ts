// Backups of an environment: each is an operation the agent runs (database dump + file
// store, with checksums) and a record listed with its size and files; restore is an
// operation that takes a completed backup of the same environment.
import { randomUUID } from "node:crypto";
import type { CursorCodec } from "../../lib/cursor.ts";
import { DomainError, notFound } from "../../lib/errors.ts";
import { listPage, type PageRequest } from "../../db/keyset.ts";
import type { Scope } from "../../lib/scope.ts";
import type { EnvironmentsRepo } from "../environments/environments.repo.ts";
import type { Actor, DeploymentsService } from "../deployments/deployments.service.ts";
import type { BackupRow, BackupsRepo } from "./backups.repo.ts";

/** The backup_type of the snapshots an agent takes before a deploy upgrades modules (recorded from the deploy's result). */
export const PRE_DEPLOY = "pre_deploy";

export function backupView(b: BackupRow) {
  return {
    id: b.id,
    environment_id: b.environmentId,
    task_id: b.deploymentId,
    backup_type: b.backupType,
    comment: b.comment,
    status: b.status,
    size_bytes: b.sizeBytes,
    files: (b.files ?? []) as { name: string; size: number; sha256: string }[],
    error_message: b.errorMessage,
    created_at: b.createdAt.toISOString(),
    completed_at: b.completedAt?.toISOString() ?? null,
  };
}

export function createBackupsService(deps: {
  backups: BackupsRepo;
  environments: Pick<EnvironmentsRepo, "get">;
  deployments: Pick<DeploymentsService, "requestOperation">;
  cursors: CursorCodec;
}) {
  return {
    async create(scope: Scope, environmentId: string, input: { backup_type?: string | undefined; comment?: string | undefined }, actor: Actor) {
      const env = await deps.environments.get(scope, environmentId);
      if (!env) throw notFound("Environment");
      const backupId = randomUUID();
      const taskId = randomUUID();
      // The record exists before the agent can answer, so its result always finds it.
      await deps.backups.insert({
        id: backupId,
        organizationId: env.organizationId,
        environmentId: env.id,
        deploymentId: taskId,
        backupType: input.backup_type ?? "manual",
        comment: input.comment ?? null,
      });
      try {
        const op = await deps.deployments.requestOperation(scope, env.id, "backup", actor, { id: taskId, extraData: { backup_id: backupId } });
        return { op, backupId };
      } catch (err) {
        await deps.backups.delete(backupId);
        throw err;
      }
    },

    async get(scope: Scope, id: string): Promise<BackupRow> {
      const row = await deps.backups.get(scope.organizationId, id);
      if (!row) throw notFound("Backup");
      return row;
    },

    async list(scope: Scope, environmentId: string, page: PageRequest) {
      const env = await deps.environments.get(scope, environmentId);
      if (!env) throw notFound("Environment");
      return listPage(deps.cursors, `backups:${env.id}`, page, (limit, after) => deps.backups.listForEnvironment(env.id, limit, after), backupView);
    },

    async restore(scope: Scope, environmentId: string, backupId: string, actor: Actor) {
      const env = await deps.environments.get(scope, environmentId);
      if (!env) throw notFound("Environment");
      const backup = await deps.backups.ofEnvironment(env.id, backupId);
      if (!backup) throw notFound("Backup");
      if (backup.backupType === PRE_DEPLOY) {
        throw new DomainError("backup_not_restorable", `Backup ${backupId} is a pre-deploy snapshot: the server rolls back to it by itself when a deploy fails; it cannot be restored on request`);
      }
      if (backup.status !== "completed") throw new DomainError("backup_not_ready", `Backup ${backupId} is ${backup.status}; only a completed backup can be restored`);
      return deps.deployments.requestOperation(scope, env.id, "restore", actor, { extraData: { backup_id: backupId } });
    },
  };
}
export type BackupsService = ReturnType<typeof createBackupsService>;
