// Parameters of the commands that move an environment's data: backup and restore, and the
// ERP archive (a vendor-made backup) a restore or a migration's deploy loads.
import { Type, type Static } from "typebox";
import { Nullable, Timestamp, Uuid } from "./fields.ts";

const strict = { additionalProperties: false } as const;

/** A path on the control plane's origin (the agent's own control plane URL), never another host. */
const ControlPlanePath = Type.String({ pattern: "^/(?!/)[A-Za-z0-9_.~/-]*$", maxLength: 1024 });

const BackupFileSum = Type.Object(
  { name: Type.String({ pattern: "^[a-z0-9][a-z0-9._-]{0,63}$" }), size: Type.Integer({ minimum: 0 }), sha256: Type.String({ pattern: "^[0-9a-f]{64}$" }) },
  strict,
);

/**
 * An ERP backup as the vendor's tools make it (a zip with dump.sql, manifest.json and
 * filestore/, a tar or tar.gz with a SQL dump, or a plain SQL file): one file the agent
 * fetches from the control plane's store at GET <control plane URL>`path`/<file.name> and
 * checks against the signed size and sha256. With `neutralize`, the copy is neutralised by
 * the image's own `odoo neutralize` and re-keyed (new database.uuid and database.secret,
 * web.base.url of the environment's domain) before it is served.
 */
export const ErpArchive = Type.Object(
  {
    path: ControlPlanePath,
    expires_at: Timestamp,
    file: BackupFileSum,
    /** A copy that is not production. Absent: false. */
    neutralize: Type.Optional(Type.Boolean()),
  },
  strict,
);

/**
 * backup: which backup to write; with `upload`, each file goes to the control plane's backup
 * store as soon as it is written: PUT <control plane URL><path>/<name>, Authorization: Bearer
 * <token> (good for this backup only, until expires_at). A failed upload fails the backup.
 */
export const BackupParams = Type.Object(
  {
    deployment_id: Uuid,
    environment_id: Uuid,
    backup_id: Uuid,
    upload: Type.Optional(Type.Object({ path: ControlPlanePath, token: Type.String({ pattern: "^[A-Za-z0-9._-]{1,512}$" }), expires_at: Timestamp }, strict)),
  },
  strict,
);
export type BackupParams = Static<typeof BackupParams>;

/**
 * restore: which backup to read. With `source` (a backup in the control plane's store, of
 * this environment or another of the organisation), the agent restores from its own copy
 * when it has one that matches `files`, else it fetches each file from GET <control plane
 * URL><path>/<name> and checks its size and sha256 against `files` (signed, so authentic).
 */
export const RestoreParams = Type.Object(
  {
    deployment_id: Uuid,
    environment_id: Uuid,
    backup_id: Uuid,
    source: Type.Optional(
      Type.Object({ environment_id: Uuid, path: ControlPlanePath, expires_at: Timestamp, files: Type.Array(BackupFileSum, { minItems: 1, maxItems: 8 }) }, strict),
    ),
    /**
     * Instead of a backup Berth made: an ERP backup as the vendor's tools make it (see
     * ErpArchive); `backup_id` then names the upload (a migration).
     */
    archive: Type.Optional(ErpArchive),
    /**
     * The restore makes a copy (a backup of another environment): before it serves, the
     * image's own `odoo neutralize` runs on it and it is re-keyed (new database.uuid and
     * database.secret, web.base.url = `base_url`, or Odoo's default when null). Absent: the
     * environment's own data, restored as it was. `catch_mail`: the environment's outgoing
     * mail goes to this server's mail catcher (odoo.conf, as its deploy wrote it), so every
     * mail server of the copy is deactivated, the dummy one `odoo neutralize` adds included:
     * with none active, Odoo sends through odoo.conf's smtp settings.
     */
    copy: Type.Optional(
      Type.Object({ base_url: Nullable(Type.String({ pattern: "^https://[^\\s'\"\\\\]+$", maxLength: 300 })), catch_mail: Type.Optional(Type.Literal(true)) }, strict),
    ),
    /**
     * A copy taken now of another environment on this server (copy-from, backup "fresh"):
     * instead of reading a backup, a consistent pg_dump of that environment's live database is
     * streamed into the new database and its file store copied by name; the source is only
     * read. `backup_id` then names the copy. Requires `copy`.
     */
    live_source: Type.Optional(Type.Object({ environment_id: Uuid }, strict)),
  },
  strict,
);
export type RestoreParams = Static<typeof RestoreParams>;
