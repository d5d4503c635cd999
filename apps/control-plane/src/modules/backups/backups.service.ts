// Backups of an environment: each is an operation the agent runs (database dump + file
// store, with checksums) whose files the agent then uploads to the backup store
// (lib/object-store); the record is completed only when every file arrived intact. From the
// store a backup is downloaded through short-lived signed links (backup-links.ts), restored
// onto any environment of its organisation, on any server, and deleted with its bytes.
import { randomUUID } from "node:crypto";
import type { CursorCodec } from "../../lib/cursor.ts";
import { DomainError, notFound } from "../../lib/errors.ts";
import { listPage, type PageRequest } from "../../db/keyset.ts";
import type { Scope } from "../../lib/scope.ts";
import { parseRange } from "../../lib/byte-range.ts";
import { ObjectStoreError, type ObjectStore } from "../../lib/object-store/index.ts";
import type { EnvironmentsRepo } from "../environments/environments.repo.ts";
import type { DeploymentsService } from "../deployments/operations/operations.service.ts";
import type { Actor } from "../deployments/operations/operation-start.ts";
import { DOWNLOAD_PATH, type BackupLinks } from "./backup-links.ts";
import type { BackupRow, BackupsRepo, StoredFile } from "./backups.repo.ts";

/** The backup_type of the snapshots an agent takes before a deploy upgrades modules (recorded from the deploy's result). */
export const PRE_DEPLOY = "pre_deploy";
/** What a backup's file may be called (db.dump, filestore.tar.gz, manifest.json), and how many it may have. */
export const BACKUP_FILE_NAME = /^[a-z0-9][a-z0-9._-]{0,63}$/;
export const MAX_BACKUP_FILES = 8;

export function storageKeyOf(b: { organizationId: string; environmentId: string; id: string }): string {
  return `backups/${b.organizationId}/${b.environmentId}/${b.id}`;
}

const storedFilesOf = (b: BackupRow) => (Array.isArray(b.storedFiles) ? (b.storedFiles as StoredFile[]) : []);

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
    storage: (b.storage ?? null) as "local" | "s3" | null,
    error_message: b.errorMessage,
    created_at: b.createdAt.toISOString(),
    completed_at: b.completedAt?.toISOString() ?? null,
  };
}

export interface DownloadFile {
  name: string;
  size_bytes: number;
  sha256: string;
  url: string;
}

export function createBackupsService(deps: {
  backups: BackupsRepo;
  environments: Pick<EnvironmentsRepo, "get">;
  deployments: Pick<DeploymentsService, "requestOperation">;
  cursors: CursorCodec;
  store: ObjectStore;
  links: BackupLinks;
}) {
  const { store } = deps;

  /** The environment's backup, in the caller's scope. */
  async function ofEnvironment(scope: Scope, environmentId: string, backupId: string): Promise<BackupRow> {
    const env = await deps.environments.get(scope, environmentId);
    if (!env) throw notFound("Environment");
    const backup = await deps.backups.ofEnvironment(env.id, backupId);
    if (!backup) throw notFound("Backup");
    return backup;
  }

  /** A completed backup whose files are all in the store. */
  function requireStored(backup: BackupRow): StoredFile[] {
    if (backup.status === "pending") throw new DomainError("backup_in_progress", `Backup ${backup.id} is still being made`);
    if (backup.status !== "completed") throw new DomainError("backup_not_ready", `Backup ${backup.id} is ${backup.status}; only a completed backup can be downloaded or restored elsewhere`);
    const files = storedFilesOf(backup);
    if (backup.storage === null || backup.storageKey === null || files.length === 0) {
      throw new DomainError("backup_not_stored", `Backup ${backup.id} is kept only on its server${backup.backupType === PRE_DEPLOY ? " (a pre-deploy snapshot)" : ""}: it cannot be downloaded or restored on another environment`);
    }
    return files;
  }

  function linkFiles(base: string, token: string, files: StoredFile[]): DownloadFile[] {
    return files.map((f) => ({ name: f.name, size_bytes: f.size, sha256: f.sha256, url: `${base}${DOWNLOAD_PATH}/${token}/${f.name}` }));
  }

  /** The backup a download link opens, with its stored files; the link's own checks first. */
  async function openLink(token: string): Promise<{ backup: BackupRow; files: StoredFile[] }> {
    const { backupId } = deps.links.checkDownload(token);
    const backup = await deps.backups.byId(backupId);
    if (!backup) throw notFound("Backup");
    return { backup, files: requireStored(backup) };
  }

  async function get(scope: Scope, id: string): Promise<BackupRow> {
    const row = await deps.backups.get(scope.organizationId, id);
    if (!row) throw notFound("Backup");
    return row;
  }

  return {
    /** `backupId`: the id a caller already named it by (a copy across servers waits for it). */
    async create(scope: Scope, environmentId: string, input: { backup_type?: string | undefined; comment?: string | undefined }, actor: Actor, backupId: string = randomUUID()) {
      const env = await deps.environments.get(scope, environmentId);
      if (!env) throw notFound("Environment");
      const taskId = randomUUID();
      // The record exists before the agent can answer, so its result always finds it.
      await deps.backups.insert({
        id: backupId,
        organizationId: env.organizationId,
        environmentId: env.id,
        deploymentId: taskId,
        backupType: input.backup_type ?? "manual",
        comment: input.comment ?? null,
        // The backup command tells the agent to upload every file here (dispatcher.ts).
        storage: store.kind,
        storageKey: storageKeyOf({ organizationId: env.organizationId, environmentId: env.id, id: backupId }),
      });
      try {
        // A scheduled backup's operation says so (trigger "scheduled"); any other is the caller's.
        const trigger = input.backup_type === "scheduled" ? { trigger: "scheduled" } : {};
        const op = await deps.deployments.requestOperation(scope, env.id, "backup", actor, { id: taskId, extraData: { backup_id: backupId }, ...trigger });
        if (op.id !== taskId) {
          // A retry of a request that made its backup before its answer was lost: that one is the answer.
          await deps.backups.delete(backupId);
          return { op, backupId: String((op.extraData as { backup_id?: string }).backup_id) };
        }
        return { op, backupId };
      } catch (err) {
        await deps.backups.delete(backupId);
        throw err;
      }
    },

    get,

    async list(scope: Scope, environmentId: string, page: PageRequest) {
      const env = await deps.environments.get(scope, environmentId);
      if (!env) throw notFound("Environment");
      return listPage(deps.cursors, `backups:${env.id}`, page, (limit, after) => deps.backups.listForEnvironment(env.id, limit, after), backupView);
    },

    /**
     * Restores onto this environment a completed backup of any environment of the same
     * organisation: one of its own (on its server, or fetched from the store), or another's,
     * whose files must be in the backup store (the restore command carries a signed link).
     */
    async restore(scope: Scope, environmentId: string, backupId: string, actor: Actor) {
      const env = await deps.environments.get(scope, environmentId);
      if (!env) throw notFound("Environment");
      const backup = await deps.backups.get(env.organizationId, backupId);
      if (!backup) throw notFound("Backup");
      // Another project's backup is restorable only by a caller who may see that project.
      if (backup.environmentId !== env.id && !(await deps.environments.get(scope, backup.environmentId))) throw notFound("Backup");
      if (backup.backupType === PRE_DEPLOY) {
        throw new DomainError("backup_not_restorable", `Backup ${backupId} is a pre-deploy snapshot: the server rolls back to it by itself when a deploy fails; it cannot be restored on request`);
      }
      if (backup.status !== "completed") throw new DomainError("backup_not_ready", `Backup ${backupId} is ${backup.status}; only a completed backup can be restored`);
      if (backup.environmentId !== env.id) requireStored(backup);
      return deps.deployments.requestOperation(scope, env.id, "restore", actor, { extraData: { backup_id: backupId, source_environment_id: backup.environmentId } });
    },

    /**
     * A short-lived signed link to the backup's files (DOWNLOAD_LINK_TTL_MS): `url` answers
     * the list of files as JSON, and each file's own url its bytes. `base` is this control
     * plane's origin as the caller reaches it.
     */
    async downloadLink(scope: Scope, environmentId: string, backupId: string, base: string) {
      const backup = await ofEnvironment(scope, environmentId, backupId);
      const files = requireStored(backup);
      const { token, expiresAt } = deps.links.issueDownload(backup);
      return { url: `${base}${DOWNLOAD_PATH}/${token}`, expires_at: expiresAt.toISOString(), files: linkFiles(base, token, files) };
    },

    /** What a download link's own URL answers: the backup and its files (each with its link). */
    async downloadIndex(token: string, base: string) {
      const { backup, files } = await openLink(token);
      return { backup_id: backup.id, environment_id: backup.environmentId, created_at: backup.createdAt.toISOString(), files: linkFiles(base, token, files) };
    },

    /**
     * A file of the backup a download link opens, whole or the byte range asked for. The
     * stored size and SHA-256 (computed when the agent uploaded it) go with it.
     */
    async openFile(token: string, name: string, rangeHeader: string | undefined) {
      const { backup, files } = await openLink(token);
      const file = files.find((f) => f.name === name);
      if (!file) throw new DomainError("backup_file_not_found", `Backup ${backup.id} has no file ${JSON.stringify(name.slice(0, 64))}: it has ${files.map((f) => f.name).join(", ")}`);
      const range = parseRange(rangeHeader, file.size);
      if (range.kind === "unsatisfiable") {
        throw new DomainError("range_not_satisfiable", `${file.name} has ${file.size} bytes`, undefined, { "content-range": `bytes */${file.size}` });
      }
      const key = `${backup.storageKey}/${file.name}`;
      try {
        const body = await store.get(key, range.kind === "partial" ? { range: { start: range.start, end: range.end } } : {});
        return { file, body, range: range.kind === "partial" ? { start: range.start, end: range.end } : null };
      } catch (error) {
        if (error instanceof ObjectStoreError && error.code === "object_not_found") {
          throw new DomainError("backup_file_not_found", `${file.name} of backup ${backup.id} is missing from the backup store (${store.location})`);
        }
        throw error;
      }
    },

    /**
     * An agent's upload of one file of a pending backup (its token says which): streamed into
     * the store while its SHA-256 is computed, and kept only if size and digest are what the
     * agent declared (else removed: upload_checksum_mismatch). Recorded as arrived.
     */
    async receiveFile(token: string, backupId: string, name: string, declared: StoredFile, body: NodeJS.ReadableStream): Promise<StoredFile> {
      deps.links.checkUpload(token, backupId);
      const backup = await deps.backups.byId(backupId);
      if (!backup || backup.status !== "pending" || backup.storageKey === null) {
        throw new DomainError("backup_upload_closed", `Backup ${backupId} ${backup ? `is ${backup.status}` : "no longer exists"}: it takes no more files`);
      }
      if (!BACKUP_FILE_NAME.test(name)) throw new DomainError("validation_error", `${JSON.stringify(name.slice(0, 64))} is not a backup file name`);
      const known = storedFilesOf(backup);
      if (known.length >= MAX_BACKUP_FILES && !known.some((f) => f.name === name)) throw new DomainError("validation_error", `A backup has at most ${MAX_BACKUP_FILES} files`);
      let stored;
      try {
        stored = await store.put(`${backup.storageKey}/${name}`, body, { expect: { size_bytes: declared.size, sha256: declared.sha256 } });
      } catch (error) {
        if (error instanceof ObjectStoreError && error.code === "object_mismatch") {
          throw new DomainError("upload_checksum_mismatch", `${name} of backup ${backupId} was refused and not kept: ${error.message}`);
        }
        throw error;
      }
      const file = { name, size: stored.size_bytes, sha256: stored.sha256 };
      if (!(await deps.backups.addStoredFile(backupId, file))) {
        // Finished (or deleted) while the bytes arrived: they belong to nothing.
        await store.delete(`${backup.storageKey}/${name}`).catch(() => undefined);
        throw new DomainError("backup_upload_closed", `Backup ${backupId} finished while ${name} arrived: it takes no more files`);
      }
      return file;
    },

    /**
     * Deletes a backup: its files in the store first, then its record (a failure in between
     * leaves the record, so deleting again finishes it). A pending backup and a pre-deploy
     * snapshot (its server keeps and prunes those) are refused. What retention pruning calls.
     */
    async delete(scope: Scope, backupId: string, opts: { environmentId?: string } = {}): Promise<void> {
      const backup = opts.environmentId !== undefined ? await ofEnvironment(scope, opts.environmentId, backupId) : await get(scope, backupId);
      if (backup.status === "pending") throw new DomainError("backup_in_progress", `Backup ${backupId} is still being made: delete it once it has completed or failed`);
      if (backup.backupType === PRE_DEPLOY) throw new DomainError("backup_not_deletable", `Backup ${backupId} is a pre-deploy snapshot: its server keeps the newest few and removes older ones itself`);
      if (backup.storageKey !== null) {
        for (const f of storedFilesOf(backup)) await store.delete(`${backup.storageKey}/${f.name}`);
      }
      await deps.backups.delete(backup.id);
    },
  };
}
export type BackupsService = ReturnType<typeof createBackupsService>;
