// The control plane's whole state. PostgreSQL is the only source of truth; every table
// that holds customer data carries organization_id so every query can be scoped by it.
// One file per domain under schema/; this barrel is what @berth/db and drizzle-kit read.
export * from "./schema/users.ts";
export * from "./schema/organizations.ts";
export * from "./schema/servers.ts";
export * from "./schema/agents.ts";
export * from "./schema/projects.ts";
export * from "./schema/environments.ts";
export * from "./schema/addons.ts";
export * from "./schema/deployments.ts";
export * from "./schema/events.ts";
export * from "./schema/backups.ts";
export * from "./schema/migrations.ts";
export * from "./schema/api-keys.ts";
export * from "./schema/requests.ts";
export * from "./schema/webhooks.ts";
export * from "./schema/audit.ts";
export * from "./schema/instance.ts";
export * from "./schema/mails.ts";
