// The arrival of a backup's bytes in the backup store, through the integrity check: kept and
// queued for analysis when they match what was declared, else removed and the migration
// failed with the reason. Every tier ends here (direct, tus, the bucket's parts, import-url),
// and the upload's progress is noted here as it comes.
import { createHash } from "node:crypto";
import { Readable } from "node:stream";
import { DomainError } from "../../../lib/errors.ts";
import { ObjectStoreError, type ObjectStore } from "../../../lib/object-store/index.ts";
import type { MigrationQueue } from "../migration-queue.ts";
import type { MigrationRow, MigrationsRepo } from "../record/migrations.repo.ts";
import { STEPS } from "../record/migration-states.ts";
import { storageKeyOf } from "./stored-backup.ts";

export function createBackupReceipt(deps: { repo: Pick<MigrationsRepo, "update">; store: ObjectStore; queue: Pick<MigrationQueue, "analyze"> }) {
  const { repo, store } = deps;

  /**
   * store.put of exactly `size` bytes, when no SHA-256 was declared: a byte past the size stops
   * the write, fewer removes what was written; either is the store's object_mismatch.
   */
  async function putOfSize(key: string, body: NodeJS.ReadableStream, size: number) {
    const mismatch = (got: string) => new ObjectStoreError("object_mismatch", `${key}: received ${got} bytes, but ${size} bytes were declared`);
    const bounded = Readable.from(
      (async function* () {
        let seen = 0;
        for await (const chunk of body as AsyncIterable<Buffer>) {
          seen += chunk.length;
          if (seen > size) throw mismatch(`more than ${size}`);
          yield chunk;
        }
      })(),
    );
    const stored = await store.put(key, bounded);
    if (stored.size_bytes !== size) {
      await store.delete(key).catch(() => undefined);
      throw mismatch(String(stored.size_bytes));
    }
    return stored;
  }

  return {
    /** The integrity check of bytes already in the store (parts completed in the bucket): read back, measured, removed if wrong. */
    async verifyStored(m: MigrationRow, key: string): Promise<MigrationRow> {
      const hash = createHash("sha256");
      let size = 0;
      for await (const chunk of await store.get(key)) {
        size += (chunk as Buffer).length;
        hash.update(chunk as Buffer);
      }
      const sha256 = hash.digest("hex");
      if (size !== m.declaredSizeBytes || (m.declaredSha256 !== null && sha256 !== m.declaredSha256)) {
        await store.delete(key);
        const message = `Integrity check failed: received ${size} bytes with sha256 ${sha256}, but ${m.declaredSizeBytes} bytes${m.declaredSha256 === null ? "" : ` with sha256 ${m.declaredSha256}`} were declared; nothing was kept, upload the backup again`;
        await repo.update(m.id, { status: "failed", errorMessage: message, currentStep: STEPS.verifying, uploadId: null }, { from: ["uploading"] });
        throw new DomainError("upload_checksum_mismatch", message);
      }
      const row = await repo.update(
        m.id,
        { storage: store.kind, storageKey: key, storedSha256: sha256, storedSizeBytes: size, receivedBytes: size, currentStep: STEPS.analyzing, uploadId: null },
        { from: ["uploading"] },
      );
      if (!row) {
        await store.delete(key).catch(() => undefined);
        throw new DomainError("migration_not_uploadable", `Migration ${m.id} was cancelled while its backup arrived; nothing was kept`);
      }
      await deps.queue.analyze(m.id);
      return row;
    },

    async noteUploadId(id: string, uploadId: string): Promise<void> {
      await repo.update(id, { uploadId }, { from: ["uploading"], event: false });
    },

    async noteProgress(id: string, receivedBytes: number): Promise<void> {
      await repo.update(id, { receivedBytes }, { from: ["uploading", "importing"] });
    },

    /**
     * Streams a backup into the store with the integrity check: kept and queued for analysis
     * when it matches, else removed, the migration failed with the reason, and
     * upload_checksum_mismatch thrown. The size is always checked; the SHA-256 when the sender
     * declared one (at init, or now: `sha256`). Without one (platform spec 4.3 names none) the
     * store's digest, computed while it wrote, is recorded and shown (sha256_source computed),
     * as S3 and Stripe do: never refused for the lack of a checksum.
     */
    async receive(m: MigrationRow, body: NodeJS.ReadableStream, declared: { size: number; sha256: string | null }): Promise<MigrationRow> {
      const sha256 = (m.declaredSha256 ?? declared.sha256)?.toLowerCase() ?? null;
      const key = storageKeyOf(m);
      await repo.update(m.id, { currentStep: STEPS.verifying, declaredSha256: sha256 }, { from: ["uploading", "importing"] });
      let stored;
      try {
        stored = sha256 === null ? await putOfSize(key, body, declared.size) : await store.put(key, body, { expect: { size_bytes: declared.size, sha256 } });
      } catch (error) {
        if (error instanceof ObjectStoreError && error.code === "object_mismatch") {
          const message = `Integrity check failed: ${error.message.replace(/^[^:]*: /, "")}; nothing was kept, upload the backup again`;
          await repo.update(m.id, { status: "failed", errorMessage: message, currentStep: STEPS.verifying, uploadId: null }, { from: ["uploading", "importing"] });
          throw new DomainError("upload_checksum_mismatch", message);
        }
        throw error;
      }
      const row = await repo.update(
        m.id,
        // The upload's id stays: its URL then answers HEAD with "complete" (intake.service.ts resumable()).
        { storage: store.kind, storageKey: key, storedSha256: stored.sha256, storedSizeBytes: stored.size_bytes, receivedBytes: stored.size_bytes, currentStep: STEPS.analyzing },
        { from: ["uploading", "importing"] },
      );
      if (!row) {
        // Cancelled (or deleted) while the bytes arrived: they belong to nothing.
        await store.delete(key).catch(() => undefined);
        throw new DomainError("migration_not_uploadable", `Migration ${m.id} was cancelled while its backup arrived; nothing was kept`);
      }
      await deps.queue.analyze(m.id);
      return row;
    },
  };
}
export type BackupReceipt = ReturnType<typeof createBackupReceipt>;
