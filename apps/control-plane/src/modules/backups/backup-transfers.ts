// What the backup and restore commands carry so the agent can move a backup's files
// (dispatcher.ts asks when it signs them): a backup command the path to upload each file to
// and an upload token good for that backup only; a restore command of a backup in the store
// a download link and every file's size and SHA-256. The command is signed, so the digests
// are authenticated: the agent restores only bytes that match them.
//
// The tokens live as long as the command may: waiting for an offline server (DISPATCH_TTL_MS)
// plus the longest step that uses them. An upload token also stops working as soon as its
// backup is no longer pending.
import { DOWNLOAD_PATH, type BackupLinks } from "./backup-links.ts";
import type { BackupsRepo, StoredFile } from "./backups.repo.ts";
import { ACTIVE_STATUSES } from "../deployments/operations/deployment-state.ts";

const HOUR = 3600_000;
/** Dispatch wait (30 min) + the backup's longest step (2 h) + margin. */
export const UPLOAD_TOKEN_TTL_MS = 3 * HOUR;
/** Dispatch wait (30 min) + the restore's download and checks (2 h) + margin. */
export const FETCH_LINK_TTL_MS = 3 * HOUR;

export interface BackupUpload {
  /** On the control plane's origin; the agent PUTs each file to <path>/<name>. */
  path: string;
  token: string;
  expires_at: string;
}

export interface RestoreSource {
  environment_id: string;
  /** On the control plane's origin; the agent GETs each file from <path>/<name>. */
  path: string;
  expires_at: string;
  files: StoredFile[];
}

export function createBackupTransfers(deps: { repo: Pick<BackupsRepo, "byId" | "stateOf">; links: BackupLinks }) {
  return {
    /** The backup command's `upload`, when its record says the files go to the store. */
    async uploadParams(backupId: string): Promise<BackupUpload | null> {
      const b = await deps.repo.byId(backupId);
      if (!b || b.storageKey === null) return null;
      const { token, expiresAt } = deps.links.issueUpload(b, UPLOAD_TOKEN_TTL_MS);
      return { path: `/agent/v1/backups/${b.id}/files`, token, expires_at: expiresAt.toISOString() };
    },

    /**
     * Where a backup stands for a copy waiting on it: "pending" while its operation may still
     * finish it; one whose operation ended without finishing it (cancelled, timed out) is
     * "failed", with the operation's status as the reason.
     */
    async state(backupId: string): Promise<{ status: string; errorMessage: string | null } | null> {
      const b = await deps.repo.stateOf(backupId);
      if (!b) return null;
      if (b.status === "pending" && b.operationStatus !== null && !ACTIVE_STATUSES.includes(b.operationStatus as never)) {
        return { status: "failed", errorMessage: `its backup operation was ${b.operationStatus}` };
      }
      return { status: b.status, errorMessage: b.errorMessage };
    },

    /** The restore command's `source`, when the backup's files are all in the store. */
    async restoreSource(backupId: string): Promise<RestoreSource | null> {
      const b = await deps.repo.byId(backupId);
      const files = Array.isArray(b?.storedFiles) ? (b.storedFiles as StoredFile[]) : [];
      if (!b || b.status !== "completed" || b.storageKey === null || files.length === 0) return null;
      const { token, expiresAt } = deps.links.issueDownload(b, FETCH_LINK_TTL_MS);
      return { environment_id: b.environmentId, path: `${DOWNLOAD_PATH}/${token}`, expires_at: expiresAt.toISOString(), files: files.map((f) => ({ name: f.name, size: f.size, sha256: f.sha256 })) };
    },
  };
}
export type BackupTransfers = ReturnType<typeof createBackupTransfers>;
