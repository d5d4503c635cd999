// Where a migration's backup lives in the backup store, and how its record names a
// parallel-part upload of the bucket (tiers 3 and 4 on S3) apart from a resumable one.
export const storageKeyOf = (m: { organizationId: string; id: string }) => `migrations/${m.organizationId}/${m.id}/backup`;

/** The prefix of a record's upload id when the upload is the bucket's multipart upload (the rest is its id there). */
export const S3_UPLOAD = "s3:";
