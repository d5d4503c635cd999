// The settings of what the control plane stores for its servers: the backup store (a folder or
// an S3-compatible bucket) and the migration uploads assembled before they move into it.
import { setting } from "@berth/protocol";
import { DEFAULT_UPLOAD_QUOTA_BYTES } from "../modules/migrations/intake/upload-limits.ts";
import { localPath, positiveWhole } from "./setting-parsers.ts";

export const STORAGE_SETTINGS = {
  backupDir: setting({
    name: "BERTH_BACKUP_DIR",
    defaultText: "`<BERTH_DATA_DIR>/backups`",
    description: "The backup store on the control plane's disk: every file of every backup its servers upload (unless a bucket is set)",
    parse: localPath,
  }),
  backupS3Bucket: setting({
    name: "BERTH_BACKUP_S3_BUCKET",
    defaultText: "none (the folder BERTH_BACKUP_DIR)",
    description: "Keep the backups in this bucket of an S3-compatible store instead",
    parse: (raw) => {
      if (!/^[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]$/.test(raw)) throw new Error(`BERTH_BACKUP_S3_BUCKET must be a bucket name (3-63 of a-z 0-9 . -), got ${JSON.stringify(raw)}`);
      return raw;
    },
  }),
  backupS3Endpoint: setting({
    name: "BERTH_BACKUP_S3_ENDPOINT",
    defaultText: "AWS",
    description: "The store's origin when it is not AWS, e.g. `http://minio:9000`",
    parse: (raw) => {
      if (!/^https?:\/\/[^\s/]+\/?$/.test(raw)) throw new Error(`BERTH_BACKUP_S3_ENDPOINT must be an origin like https://s3.example.com, got ${JSON.stringify(raw)}`);
      return raw.replace(/\/$/, "");
    },
  }),
  backupS3Region: setting({ name: "BERTH_BACKUP_S3_REGION", default: "us-east-1", description: "The bucket's region", parse: (raw) => raw }),
  backupS3AccessKeyId: setting({
    name: "BERTH_BACKUP_S3_ACCESS_KEY_ID",
    defaultText: "the AWS SDK's credential chain",
    description: "The store's access key id (with BERTH_BACKUP_S3_SECRET_ACCESS_KEY)",
    parse: (raw) => raw,
  }),
  backupS3SecretAccessKey: setting({
    name: "BERTH_BACKUP_S3_SECRET_ACCESS_KEY",
    defaultText: "the AWS SDK's credential chain",
    secret: true,
    description: "The store's secret access key (with BERTH_BACKUP_S3_ACCESS_KEY_ID)",
    parse: (raw) => raw,
  }),
  backupS3Prefix: setting({
    name: "BERTH_BACKUP_S3_PREFIX",
    defaultText: "none",
    description: "Folders in the bucket the backups go under, each ending in `/`, e.g. `berth/`",
    parse: (raw) => {
      if (!/^(?:[A-Za-z0-9_-][A-Za-z0-9._-]*\/)+$/.test(raw)) throw new Error(`BERTH_BACKUP_S3_PREFIX must be folder names each ending in /, like berth/, got ${JSON.stringify(raw)}`);
      return raw;
    },
  }),
  backupS3ForcePathStyle: setting({
    name: "BERTH_BACKUP_S3_FORCE_PATH_STYLE",
    defaultText: "true with an endpoint",
    description: "`true`: address the bucket as `<endpoint>/<bucket>` rather than `<bucket>.<endpoint>`",
    parse: (raw) => {
      const value = raw.toLowerCase();
      if (value !== "true" && value !== "false") throw new Error(`BERTH_BACKUP_S3_FORCE_PATH_STYLE must be true or false, got ${JSON.stringify(value)}`);
      return value === "true";
    },
  }),
  migrationUploadDir: setting({
    name: "BERTH_MIGRATION_UPLOAD_DIR",
    defaultText: "`<BERTH_DATA_DIR>/migration-uploads`",
    description: "Where resumable migration uploads and import-URL downloads are assembled before they move, verified, into the backup store",
    parse: localPath,
  }),
  migrationQuotaBytes: setting({
    name: "BERTH_MIGRATION_QUOTA_BYTES",
    default: String(DEFAULT_UPLOAD_QUOTA_BYTES),
    description:
      "Bytes one organisation's migration backups may take (200 GiB by default): those stored (until the migration is deleted, or a cancelled or failed one is cleaned up) and those being uploaded or imported (their declared size). An upload/init, resumable upload or import-url past it is refused with 413 upload_quota_exceeded; an import without a Content-Length stops where it ends",
    parse: positiveWhole("BERTH_MIGRATION_QUOTA_BYTES"),
  }),
} as const;
