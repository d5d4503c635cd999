// The migration archive is execution/'s (execution/migration-archive.ts); this path stays for
// the deployments module's dispatcher, which names it.
export type { MigrationArchives } from "./execution/migration-archive.ts";
