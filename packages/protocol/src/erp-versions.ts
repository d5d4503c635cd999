// The ERP versions Berth knows (platform spec 4.3), in one table: which are hosted (active),
// which are deprecated, and 13.0, "deprecated with limited support". Only major.minor selects
// an image. Projects accept every version here; a migrated backup must carry an active one
// (the others are refused with a message saying what to do).

export const ERP_VERSIONS = {
  "19.0": "active",
  "18.0": "active",
  "17.0": "active",
  "16.0": "active",
  "15.0": "deprecated",
  "14.0": "deprecated",
  /** Deprecated with limited support: projects may still name it, migrations refuse it. */
  "13.0": "limited",
} as const;

export type ErpVersion = keyof typeof ERP_VERSIONS;
export type ErpVersionSupport = (typeof ERP_VERSIONS)[ErpVersion];

const versionsWith = (support: readonly ErpVersionSupport[]) =>
  (Object.keys(ERP_VERSIONS) as ErpVersion[]).filter((v) => support.includes(ERP_VERSIONS[v]));

/** Hosted versions, newest first. */
export const ACTIVE_ERP_VERSIONS = versionsWith(["active"]);
/** Known versions no longer hosted (deprecated, and 13.0's limited support), newest first. */
export const DEPRECATED_ERP_VERSIONS = versionsWith(["deprecated", "limited"]);
