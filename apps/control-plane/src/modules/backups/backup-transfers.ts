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

export function createBackupTransfers(deps: { repo: Pick<BackupsRepo, "byId">; links: BackupLinks }) {
  return {
    /** The backup command's `upload`, when its record says the files go to the store. */
    async uploadParams(backupId: string): Promise<BackupUpload | null> {
      const b = await deps.repo.byId(backupId);
      if (!b || b.storageKey === null) return null;
      const { token, expiresAt } = deps.links.issueUpload(b, UPLOAD_TOKEN_TTL_MS);
      return { path: `/agent/v1/backups/${b.id}/files`, token, expires_at: expiresAt.toISOString() };
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
