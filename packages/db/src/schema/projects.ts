// Projects, their members and the git push deliveries they received (modules/projects, modules/git-hooks).
import { sql } from "drizzle-orm";
import { check, index, integer, pgTable, primaryKey, text, uuid } from "drizzle-orm/pg-core";
import { id, ts } from "./columns.ts";
import { organizations } from "./organizations.ts";
import { servers } from "./servers.ts";
import { users } from "./users.ts";

export const projects = pgTable(
  "projects",
  {
    id: id(),
    organizationId: uuid("organization_id").notNull().references(() => organizations.id),
    serverId: uuid("server_id").references(() => servers.id),
    name: text("name").notNull(),
    erpVersion: text("erp_version"),
    /** The repository URL without its userinfo (user:token@), which is in gitRepoCredentialsEnc. */
    gitRepoUrl: text("git_repo_url"),
    /** The userinfo of the repository URL as written (percent-encoded), sealed with the instance master key; null when it had none. */
    gitRepoCredentialsEnc: text("git_repo_credentials_enc"),
    defaultBranch: text("default_branch").notNull().default("main"),
    /** HMAC-SHA256 key of the inbound git push hook; sealed with the instance master key. */
    gitHookSecretEnc: text("git_hook_secret_enc"),
    /**
     * The server a push to a branch without an environment creates a development environment
     * on (modules/git-hooks/push-environments.ts); null: pushes create none.
     */
    developmentServerId: uuid("development_server_id").references(() => servers.id),
    /** At most this many of the project's development environments run at once; the oldest idle one is stopped for a new one. */
    developmentLimit: integer("development_limit").notNull().default(3),
    createdAt: ts("created_at").notNull().defaultNow(),
    updatedAt: ts("updated_at").notNull().defaultNow(),
    deletedAt: ts("deleted_at"),
  },
  (t) => [
    index("projects_org_idx").on(t.organizationId, t.createdAt, t.id),
    check("projects_development_limit", sql`${t.developmentLimit} between 1 and 20`),
  ],
);

/** Project-level roles: admin | member. */
export const projectMemberships = pgTable(
  "project_memberships",
  {
    projectId: uuid("project_id").notNull().references(() => projects.id),
    userId: uuid("user_id").notNull().references(() => users.id),
    role: text("role").notNull(),
    createdAt: ts("created_at").notNull().defaultNow(),
  },
  (t) => [primaryKey({ columns: [t.projectId, t.userId] })],
);

/** Inbound git push deliveries already handled: a redelivered id deploys nothing twice. */
export const gitHookDeliveries = pgTable(
  "git_hook_deliveries",
  {
    gitHost: text("git_host").notNull(),
    deliveryId: text("delivery_id").notNull(),
    projectId: uuid("project_id").notNull().references(() => projects.id),
    deploymentIds: uuid("deployment_ids").array().notNull(),
    receivedAt: ts("received_at").notNull().defaultNow(),
  },
  (t) => [primaryKey({ columns: [t.gitHost, t.deliveryId, t.projectId] })],
);
