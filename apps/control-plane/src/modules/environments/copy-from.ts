// copy-from: replaces a staging or development environment's database and file store with a
// copy of another environment of its project, in one operation on the target (kind "copy",
// followed like a restore: same steps, logs, events and webhooks). The source is only read.
//
//   backup "fresh"   the source is copied now, without stopping it. On a shared server its
//                    server streams a consistent pg_dump of its database into the target's
//                    new database and copies its file store by name (apps/agent
//                    executor/backup/live-copy.ts): the bytes never leave the server. Across
//                    servers the source is backed up to the backup store now (a normal
//                    backup, listed with its others), and the copy waits for it
//                    (deployments/operations/operation-chains.ts), then restores it as "latest".
//   backup "latest"  the source's most recent completed backup in the backup store, restored
//                    on the target's server: from the source's own copy there when it has one
//                    (same server: nothing moves), else fetched from the store (across servers).
//
// Either way the agent loads it through the safe restore (a new database, swapped in one
// transaction), neutralises it with the target image's own `odoo neutralize` and re-keys it
// (new database uuid and secret, the target's address) before it serves; a failure at any
// step leaves the target as it was. Refused before anything starts: a production target, the
// target itself as source, a source of another project, an environment never deployed, and
// (across servers) a source busy with another operation.
import { randomUUID } from "node:crypto";
import { DomainError, notFound } from "../../lib/errors.ts";
import type { Scope } from "../../lib/scope.ts";
import type { Actor } from "../deployments/operations/operation-start.ts";
import type { DeploymentsService } from "../deployments/operations/operations.service.ts";
import type { EnvironmentRow, EnvironmentsRepo } from "./environments.repo.ts";
import type { ThenDeploy } from "../deployments/operations/operation-chains.ts";

export const COPY_BACKUPS = ["fresh", "latest"] as const;
export type CopyBackup = (typeof COPY_BACKUPS)[number];

export interface CopyFromInput {
  from_environment_id: string;
  backup?: CopyBackup | undefined;
}

/** A staging refresh on push (git-hooks/staging-refresh.ts): the copy's trigger, and the deploy of the pushed commit that runs once it succeeded (operation-chains.ts). */
export type CopyThen = { trigger: string; then_deploy: ThenDeploy; git_push: Record<string, unknown> };

const named = (env: EnvironmentRow) => `${JSON.stringify(env.name)} (${env.id})`;
const neverDeployed = (env: EnvironmentRow) => !env.isActive || env.status === "pending";

export function createCopyFrom(deps: {
  environments: Pick<EnvironmentsRepo, "get">;
  latestBackup: (environmentId: string) => Promise<{ id: string; createdAt: Date } | undefined>;
  deployments: Pick<DeploymentsService, "requestOperation" | "cancel">;
  /** Whether an operation is queued or running on the environment. */
  sourceBusy: (environmentId: string) => Promise<boolean>;
  /** Backs the source up to the store now (BackupsService.create), under the given backup id. */
  backupNow: (scope: Scope, environmentId: string, backupId: string, comment: string, actor: Actor) => Promise<unknown>;
}) {
  /**
   * A fresh copy across servers: the copy operation first (it carries the request's
   * idempotency key, so a retry finds it and backs nothing up twice), waiting for the backup
   * it names; then that backup of the source. A source busy with another operation cannot
   * be backed up: the copy is withdrawn and the request refused, nothing changed.
   */
  async function viaStore(scope: Scope, source: EnvironmentRow, target: EnvironmentRow, actor: Actor, extraData: Record<string, unknown>, trigger: { trigger?: string }) {
    const busy = (detail: string) =>
      new DomainError("copy_source_busy", `${named(source)} is running another operation, so it cannot be backed up for the copy now: try again when it has finished (${detail}); nothing was copied`);
    if (await deps.sourceBusy(source.id)) throw busy("an operation is queued or running on it");
    const backupId = randomUUID();
    const op = await deps.deployments.requestOperation(scope, target.id, "copy", actor, { ...trigger, extraData: { ...extraData, backup_id: backupId } });
    if ((op.extraData as { backup_id?: unknown }).backup_id !== backupId) return op; // a retry: the first request's copy
    try {
      await deps.backupNow(scope, source.id, backupId, `For the copy into ${target.name}`, { userId: actor.userId, apiKeyId: actor.apiKeyId });
    } catch (err) {
      await deps.deployments.cancel(scope, op.id, actor).catch(() => {});
      // Busy since the check above: the copy just made is withdrawn (cancelled).
      if (err instanceof DomainError && (err.code === "task_in_progress" || err.code === "deployment_in_progress")) throw busy(err.message);
      throw err;
    }
    return op;
  }

  return {
    /** Starts the copy onto `targetId`; `scope` is the caller's (a source it cannot see is 404). */
    async copyFrom(scope: Scope, targetId: string, input: CopyFromInput, actor: Actor, then?: CopyThen) {
      const backup = input.backup ?? "fresh";
      const target = await deps.environments.get(scope, targetId);
      if (!target) throw notFound("Environment");
      if (target.stage === "production") {
        throw new DomainError("copy_into_production", `${named(target)} is the project's production environment: a copy only replaces a staging or development environment's data`);
      }
      if (input.from_environment_id === target.id) throw new DomainError("copy_source_is_target", "from_environment_id is the environment itself: name the environment to copy from");
      const source = await deps.environments.get(scope, input.from_environment_id);
      if (!source) throw notFound("Environment");
      if (source.projectId !== target.projectId) {
        throw new DomainError("copy_source_other_project", `${named(source)} belongs to another project: an environment is copied only from its own project`);
      }
      if (neverDeployed(source)) throw new DomainError("copy_not_deployed", `${named(source)} was never deployed${source.isActive ? "" : " or was destroyed"}: it has no data to copy`);
      if (neverDeployed(target)) throw new DomainError("copy_not_deployed", `${named(target)} was never deployed: deploy it first, then copy into it`);

      const trigger = then ? { trigger: then.trigger } : {};
      const extraData = { source_environment_id: source.id, backup, ...(then ? { then_deploy: then.then_deploy, git_push: then.git_push } : {}) };
      if (backup === "latest") {
        const latest = await deps.latestBackup(source.id);
        if (!latest) throw new DomainError("copy_source_has_no_backup", `${named(source)} has no completed backup in the backup store: copy with backup "fresh", or back it up first`);
        return deps.deployments.requestOperation(scope, target.id, "copy", actor, { ...trigger, extraData: { ...extraData, backup_id: latest.id } });
      }
      if (source.serverId !== target.serverId) return viaStore(scope, source, target, actor, extraData, trigger);
      return deps.deployments.requestOperation(scope, target.id, "copy", actor, { ...trigger, extraData });
    },
  };
}
export type CopyFrom = ReturnType<typeof createCopyFrom>;
