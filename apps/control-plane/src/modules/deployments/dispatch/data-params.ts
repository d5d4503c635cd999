// The backup and restore commands' parameters: which backup, and where its files go to or
// come from in the backup store (through the narrow `backups` interface); a restore of
// another environment's backup, and a copy (copy-from), make a neutralised copy served at this
// environment's address.
import type { BackupParams, CommandParams, RestoreParams } from "@berth/protocol";
import type { EnvironmentAddresses } from "../../environments/domains.ts";
import type { DeploymentRow } from "../operations/operations.repo.ts";
import type { DispatchRepo } from "./dispatch.repo.ts";
import { DispatchError } from "./dispatch-error.ts";
import { storedOptions } from "./stored-options.ts";
import { catchesMail } from "../../mails/mail-rules.ts";

export interface DataParamsDeps {
  repo: Pick<DispatchRepo, "environmentWithProject">;
  addresses: Pick<EnvironmentAddresses, "hostname">;
  /** Where a backup's files go and come from (the backup store); absent: they stay on the server. */
  backups?: {
    uploadParams(backupId: string): Promise<BackupParams["upload"] | null>;
    restoreSource(backupId: string): Promise<RestoreParams["source"] | null>;
    /** Where a backup stands (null: no such backup, yet). */
    state(backupId: string): Promise<{ status: string; errorMessage: string | null } | null>;
  };
}

/** The backup a backup or restore operation names (extra_data.backup_id). */
function backupIdOf(extra: Record<string, unknown>): string {
  if (typeof extra.backup_id !== "string") throw new DispatchError("stored_option_invalid", "the operation names no backup (extra_data.backup_id)");
  return extra.backup_id;
}

export function createDataParams(deps: DataParamsDeps) {
  /**
   * A restore of another environment's backup makes a copy: the agent neutralises it with the
   * image's own `odoo neutralize` and re-keys it (new uuid and secret, this environment's
   * address as web.base.url) before it serves; into a staging or development environment its
   * mail servers are turned off so its mail goes to the server's catcher. The environment's own backup comes back as it was.
   */
  async function copyOf(d: DeploymentRow, extra: Record<string, unknown>): Promise<Pick<RestoreParams, "copy">> {
    if (typeof extra.source_environment_id !== "string" || extra.source_environment_id === d.environmentId) return {};
    const row = await deps.repo.environmentWithProject(d.environmentId);
    const host = row ? deps.addresses.hostname(row.env) : null;
    return { copy: { base_url: host ? `https://${host}` : null, ...(row && catchesMail(row.env.stage) ? { catch_mail: true as const } : {}) } };
  }

  return {
    async backup(d: DeploymentRow): Promise<CommandParams<"backup">> {
      const backupId = backupIdOf(storedOptions(d.extraData).extra);
      const upload = await deps.backups?.uploadParams(backupId);
      return { deployment_id: d.id, environment_id: d.environmentId, backup_id: backupId, ...(upload ? { upload } : {}) };
    },

    async restore(d: DeploymentRow): Promise<CommandParams<"restore">> {
      const { extra } = storedOptions(d.extraData);
      const backupId = backupIdOf(extra);
      const source = await deps.backups?.restoreSource(backupId);
      return { deployment_id: d.id, environment_id: d.environmentId, backup_id: backupId, ...(source ? { source } : {}), ...(await copyOf(d, extra)) };
    },

    /**
     * copy-from (environments/copy-from.ts): a restore of another environment's data as a
     * copy. "fresh" on a shared server dumps the source now on this server (live_source), and
     * the copy is named by the operation's id. Otherwise the copy names a backup of the
     * source in the store: the most recent one ("latest"), or one being taken now for it
     * (fresh across servers): until that backup is complete there is no command yet (null;
     * operation-chains.ts dispatches it when the backup finishes), and if it fails, the copy
     * fails saying so.
     */
    async copy(d: DeploymentRow): Promise<CommandParams<"restore"> | null> {
      const { extra } = storedOptions(d.extraData);
      if (typeof extra.source_environment_id !== "string") throw new DispatchError("stored_option_invalid", "the copy names no source environment (extra_data.source_environment_id)");
      const copy = await copyOf(d, extra);
      if (extra.backup === "fresh" && extra.backup_id === undefined) {
        return { deployment_id: d.id, environment_id: d.environmentId, backup_id: d.id, live_source: { environment_id: extra.source_environment_id }, ...copy };
      }
      const backupId = backupIdOf(extra);
      const source = await deps.backups?.restoreSource(backupId);
      if (source) return { deployment_id: d.id, environment_id: d.environmentId, backup_id: backupId, source, ...copy };
      if (extra.backup === "fresh") {
        const state = await deps.backups?.state(backupId);
        if (!state || state.status === "pending") return null;
        throw new DispatchError(
          "copy_backup_failed",
          `the backup of the source taken for this copy (${backupId}) ${state.status === "completed" ? "is not in the backup store" : `failed: ${state.errorMessage ?? state.status}`}; this environment is as it was`,
        );
      }
      throw new DispatchError("stored_option_invalid", `backup ${backupId} of the source is no longer in the backup store`);
    },
  };
}
