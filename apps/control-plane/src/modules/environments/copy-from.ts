// copy-from: replaces a staging or development environment's database and file store with a
// copy of another environment of its project, in one operation on the target (kind "copy",
// followed like a restore: same steps, logs, events and webhooks). The source is only read.
//
//   backup "fresh"   the source is copied now, without stopping it: its server streams a
//                    consistent pg_dump of its database into the target's new database and
//                    copies its file store by name (apps/agent executor/backup/live-copy.ts).
//                    The bytes never leave the server, so source and target share one.
//   backup "latest"  the source's most recent completed backup in the backup store, restored
//                    on the target's server: from the source's own copy there when it has one
//                    (same server: nothing moves), else fetched from the store (across servers).
//
// Either way the agent loads it through the safe restore (a new database, swapped in one
// transaction), neutralises it with the target image's own `odoo neutralize` and re-keys it
// (new database uuid and secret, the target's address) before it serves; a failure at any
// step leaves the target as it was. Refused before anything starts: a production target, the
// target itself as source, a source of another project, an environment never deployed.
import { DomainError, notFound } from "../../lib/errors.ts";
import type { Scope } from "../../lib/scope.ts";
import type { Actor } from "../deployments/operations/operation-start.ts";
import type { DeploymentsService } from "../deployments/operations/operations.service.ts";
import type { EnvironmentRow, EnvironmentsRepo } from "./environments.repo.ts";

export const COPY_BACKUPS = ["fresh", "latest"] as const;
export type CopyBackup = (typeof COPY_BACKUPS)[number];

export interface CopyFromInput {
  from_environment_id: string;
  backup?: CopyBackup | undefined;
}

const named = (env: EnvironmentRow) => `${JSON.stringify(env.name)} (${env.id})`;
const neverDeployed = (env: EnvironmentRow) => !env.isActive || env.status === "pending";

export function createCopyFrom(deps: {
  environments: Pick<EnvironmentsRepo, "get">;
  latestBackup: (environmentId: string) => Promise<{ id: string; createdAt: Date } | undefined>;
  deployments: Pick<DeploymentsService, "requestOperation">;
}) {
  return {
    /** Starts the copy onto `targetId`; `scope` is the caller's (a source it cannot see is 404). */
    async copyFrom(scope: Scope, targetId: string, input: CopyFromInput, actor: Actor) {
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

      let backupId: string | null = null;
      if (backup === "latest") {
        const latest = await deps.latestBackup(source.id);
        if (!latest) throw new DomainError("copy_source_has_no_backup", `${named(source)} has no completed backup in the backup store: copy with backup "fresh", or back it up first`);
        backupId = latest.id;
      } else if (source.serverId !== target.serverId) {
        throw new DomainError(
          "copy_fresh_across_servers",
          `${named(source)} runs on another server than ${named(target)}: back it up (POST …/backups), then copy with backup "latest" (its bytes go through the backup store)`,
        );
      }
      return deps.deployments.requestOperation(scope, target.id, "copy", actor, {
        extraData: { source_environment_id: source.id, backup, ...(backupId ? { backup_id: backupId } : {}) },
      });
    },
  };
}
export type CopyFrom = ReturnType<typeof createCopyFrom>;
