// A migration's stored backup as a deploy restores it (the restore-once rule, platform spec
// 4.3): the deploy command's `archive` (dispatcher.ts asks when it signs the command) with a
// signed link the agent fetches over its control plane's origin, never a public bucket
// (GET /downloads/migrations/<token>/<file>, backup-links.ts' mgd_ tokens), and the route
// that serves the bytes (one Range, as the backup downloads).
import type { Readable } from "node:stream";
import { DomainError } from "../../../lib/errors.ts";
import { parseRange } from "../../../lib/byte-range.ts";
import { ObjectStoreError, type ObjectStore } from "../../../lib/object-store/index.ts";
import type { BackupLinks } from "../../backups/backup-links.ts";
import type { MigrationRow, MigrationsRepo } from "../record/migrations.repo.ts";

/** Where the agent fetches a migration's backup. */
export const MIGRATION_DOWNLOAD_PATH = "/downloads/migrations";
/** As long as a deploy may wait for its server and then run (dispatch TTL 30 min, restore 10 min, margin). */
export const ARCHIVE_LINK_TTL_MS = 3 * 3600_000;

/** The file's name as the agent keeps it: what its format says, whatever the upload was called. */
export function archiveFileName(m: Pick<MigrationRow, "analysis">): string {
  const format = (m.analysis as { format?: string } | null)?.format;
  return format === "zip" || format === "tar" || format === "tar.gz" || format === "sql" ? `backup.${format}` : "backup";
}

/** The migration when its backup's bytes are recorded in the store (key, size and digest), else null. */
function storedOf(m: MigrationRow | undefined) {
  if (!m || m.storageKey === null || m.storedSha256 === null || m.storedSizeBytes === null) return null;
  return { ...m, storageKey: m.storageKey, storedSha256: m.storedSha256, storedSizeBytes: m.storedSizeBytes };
}

export function createMigrationArchives(deps: { repo: Pick<MigrationsRepo, "byId">; links: Pick<BackupLinks, "issueMigrationDownload" | "checkMigrationDownload">; store: ObjectStore }) {
  return {
    /** Whether the migration's backup is in the store (what force_restore needs). */
    async stored(migrationId: string): Promise<boolean> {
      return storedOf(await deps.repo.byId(migrationId)) !== null;
    },

    /** The deploy command's `archive` for the migration's backup; null when its bytes are not in the store. */
    async archiveFor(migrationId: string) {
      const m = storedOf(await deps.repo.byId(migrationId));
      if (!m) return null;
      const { token, expiresAt } = deps.links.issueMigrationDownload(m, ARCHIVE_LINK_TTL_MS);
      return {
        migration_id: m.id,
        path: `${MIGRATION_DOWNLOAD_PATH}/${token}`,
        expires_at: expiresAt.toISOString(),
        file: { name: archiveFileName(m), size: m.storedSizeBytes, sha256: m.storedSha256 },
        neutralize: !m.production,
      };
    },

    /** The bytes a migration link opens, whole or one range. */
    async open(token: string, name: string, rangeHeader: string | undefined): Promise<{ name: string; size: number; sha256: string; body: Readable; range: { start: number; end: number } | null }> {
      const { migrationId } = deps.links.checkMigrationDownload(token);
      const m = storedOf(await deps.repo.byId(migrationId));
      if (!m) throw new DomainError("backup_file_not_found", `Migration ${migrationId} has no stored backup any more`);
      if (name !== archiveFileName(m)) throw new DomainError("backup_file_not_found", `Migration ${migrationId}'s backup is ${archiveFileName(m)}`);
      const size = m.storedSizeBytes;
      const range = parseRange(rangeHeader, size);
      if (range.kind === "unsatisfiable") throw new DomainError("range_not_satisfiable", `${name} has ${size} bytes`, undefined, { "content-range": `bytes */${size}` });
      const part = range.kind === "partial" ? { start: range.start, end: range.end } : null;
      try {
        const body = (await deps.store.get(m.storageKey, part ? { range: part } : {})) as Readable;
        return { name, size, sha256: m.storedSha256, body, range: part };
      } catch (error) {
        if (error instanceof ObjectStoreError && error.code === "object_not_found") throw new DomainError("backup_file_not_found", `Migration ${migrationId}'s backup is missing from the backup store`);
        throw error;
      }
    },
  };
}
export type MigrationArchives = ReturnType<typeof createMigrationArchives>;
