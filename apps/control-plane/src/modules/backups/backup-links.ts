// Signed, short-lived capabilities for a backup's files, checked without a database write:
//
//   download  bkd_…  GET /downloads/backups/<token>[/<file>]: the files of one completed
//                    backup of one organisation, for DOWNLOAD_LINK_TTL_MS (15 min) when a
//                    person or key asks (POST …/download), or for a restore's whole life when
//                    a restore command carries it to the agent of another server.
//   upload   bku_…  PUT /agent/v1/backups/<id>/files/<name>: the files of one pending backup,
//                    from the agent its backup command went to, for that command's life.
//   migration mgd_…  GET /downloads/migrations/<token>/<file>: a migration's stored backup,
//                    for the agent whose deploy restores it (modules/migrations).
//
// A token is base64url(backup id, 16 bytes; expiry, 4 bytes of epoch seconds) "." base64url
// (the first 16 bytes of an HMAC-SHA256 of kind and body), signed with the instance's cursor
// secret under a label of its own: short enough for a URL path (Fastify's 100 characters),
// checked by every replica alike without a database write. Nothing in it is secret but the
// signature; an expired or altered token is refused with a stable code.
import { createHmac, timingSafeEqual } from "node:crypto";
import type { Clock } from "../../lib/clock.ts";
import { DomainError } from "../../lib/errors.ts";

export const DOWNLOAD_LINK_TTL_MS = 15 * 60_000;
/** Where the download links are served (app.ts mounts backup-transfer.routes.ts at the root). */
export const DOWNLOAD_PATH = "/downloads/backups";
export const DOWNLOAD_PREFIX = "bkd_";
export const UPLOAD_PREFIX = "bku_";
export const MIGRATION_PREFIX = "mgd_";

type Kind = typeof DOWNLOAD_PREFIX | typeof UPLOAD_PREFIX | typeof MIGRATION_PREFIX;
const TOKEN = /^(bkd_|bku_|mgd_)([A-Za-z0-9_-]{27})\.([A-Za-z0-9_-]{22})$/;

const uuidBytes = (id: string) => Buffer.from(id.replace(/-/g, ""), "hex");
const uuidOf = (b: Buffer) => {
  const h = b.toString("hex");
  return `${h.slice(0, 8)}-${h.slice(8, 12)}-${h.slice(12, 16)}-${h.slice(16, 20)}-${h.slice(20)}`;
};

export function createBackupLinks(deps: { secret: string; clock: Clock }) {
  const sign = (kind: Kind, body: string) => createHmac("sha256", deps.secret).update(`backup-link:${kind}${body}`).digest().subarray(0, 16);

  function issue(kind: Kind, backup: { id: string }, ttlMs: number): { token: string; expiresAt: Date } {
    // Whole seconds, so expires_at says exactly when the token stops working.
    const e = Math.ceil((deps.clock.now().getTime() + ttlMs) / 1000);
    const raw = Buffer.alloc(20);
    uuidBytes(backup.id).copy(raw, 0);
    raw.writeUInt32BE(e, 16);
    const body = raw.toString("base64url");
    return { token: `${kind}${body}.${sign(kind, body).toString("base64url")}`, expiresAt: new Date(e * 1000) };
  }

  /** The backup id of a well-formed, authentic, unexpired token of this kind; else why not. */
  function check(kind: Kind, token: string): { backupId: string } | { refused: "invalid" | "expired" } {
    const m = TOKEN.exec(token);
    if (!m || m[1] !== kind) return { refused: "invalid" };
    const given = Buffer.from(m[3]!, "base64url");
    // 22 base64url characters carry 132 bits for the signature's 128: the decoder ignores the
    // last character's low 4 bits, so 16 spellings decode alike. Only the one issue() writes
    // is authentic, or an altered token would pass.
    if (given.toString("base64url") !== m[3]) return { refused: "invalid" };
    const expected = sign(kind, m[2]!);
    if (given.length !== expected.length || !timingSafeEqual(given, expected)) return { refused: "invalid" };
    const raw = Buffer.from(m[2]!, "base64url");
    if (raw.length !== 20) return { refused: "invalid" };
    if (raw.readUInt32BE(16) * 1000 <= deps.clock.now().getTime()) return { refused: "expired" };
    return { backupId: uuidOf(raw.subarray(0, 16)) };
  }

  /** The id a download link of this kind opens, or download_link_expired / download_link_invalid in these words. */
  function opened(kind: Kind, token: string, words: { expired: string; invalid: string }): { backupId: string } {
    const r = check(kind, token);
    if ("refused" in r) {
      throw r.refused === "expired" ? new DomainError("download_link_expired", words.expired) : new DomainError("download_link_invalid", words.invalid);
    }
    return r;
  }

  return {
    issueDownload: (backup: { id: string }, ttlMs = DOWNLOAD_LINK_TTL_MS) => issue(DOWNLOAD_PREFIX, backup, ttlMs),
    issueUpload: (backup: { id: string }, ttlMs: number) => issue(UPLOAD_PREFIX, backup, ttlMs),
    issueMigrationDownload: (migration: { id: string }, ttlMs: number) => issue(MIGRATION_PREFIX, migration, ttlMs),

    /** The migration whose backup a migration link opens; download_link_invalid (403) or download_link_expired (410). */
    checkMigrationDownload(token: string): { migrationId: string } {
      const { backupId } = opened(MIGRATION_PREFIX, token, {
        expired: "This link to a migration's backup has expired: the next deploy command carries a new one",
        invalid: "This link to a migration's backup is not valid (altered or incomplete)",
      });
      return { migrationId: backupId };
    },

    /** The backup a download link opens; download_link_invalid (403) or download_link_expired (410). */
    checkDownload(token: string): { backupId: string } {
      return opened(DOWNLOAD_PREFIX, token, {
        expired: "This download link has expired; ask for a new one: POST …/backups/{id}/download",
        invalid: "This download link is not valid (altered or incomplete); ask for a new one: POST …/backups/{id}/download",
      });
    },

    /** The upload token of this backup; upload_token_invalid (401) otherwise, expired included. */
    checkUpload(token: string, backupId: string): { backupId: string } {
      const r = check(UPLOAD_PREFIX, token);
      if ("refused" in r) throw new DomainError("upload_token_invalid", `The upload token is ${r.refused === "expired" ? "expired" : "not valid"}`);
      if (r.backupId !== backupId.toLowerCase()) throw new DomainError("upload_token_invalid", "The upload token is for another backup");
      return { backupId: r.backupId };
    },
  };
}
export type BackupLinks = ReturnType<typeof createBackupLinks>;
