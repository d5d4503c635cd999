// Add-on repositories deployed beside environments (modules/addon-repositories).
import { sql } from "drizzle-orm";
import { boolean, check, index, pgTable, text, uuid } from "drizzle-orm/pg-core";
import { id, ts } from "./columns.ts";
import { environments } from "./environments.ts";
import { organizations } from "./organizations.ts";

/**
 * Extra Git repositories of ERP add-ons deployed beside an environment's own code, at three
 * levels: platform (every environment of the installation: no organisation, no environment),
 * organization (every environment of one organisation) and environment. Private access is
 * a deploy key Berth generated (public half shown, private half sealed) or a token (sealed).
 */
export const environmentAddons = pgTable(
  "environment_addons",
  {
    id: id(),
    /** platform | organization | environment */
    level: text("level").notNull().default("environment"),
    organizationId: uuid("organization_id").references(() => organizations.id),
    environmentId: uuid("environment_id").references(() => environments.id),
    name: text("name").notNull(),
    gitUrl: text("git_url").notNull(),
    branch: text("branch").notNull(),
    /** Null deploys the branch head (each deployment records the commit it got). */
    pinnedCommit: text("pinned_commit"),
    submodules: boolean("submodules").notNull().default(false),
    /** Folders of the repository to look for modules in; empty: all of it. */
    subPaths: text("sub_paths").array().notNull().default(sql`'{}'::text[]`),
    /** public | deploy_key | token */
    access: text("access").notNull().default("public"),
    /** OpenSSH public key line of the deploy key (access deploy_key). */
    deployKeyPublic: text("deploy_key_public"),
    /** The deploy key's OpenSSH private key or the token, sealed with the master key. */
    secretEnc: text("secret_enc"),
    autoDeploy: boolean("auto_deploy").notNull().default(true),
    isActive: boolean("is_active").notNull().default(true),
    createdAt: ts("created_at").notNull().defaultNow(),
    updatedAt: ts("updated_at").notNull().defaultNow(),
  },
  (t) => [
    index("environment_addons_env_idx").on(t.environmentId),
    index("environment_addons_org_idx").on(t.organizationId),
    check(
      "environment_addons_level_scope",
      sql`(${t.level} = 'platform' and ${t.organizationId} is null and ${t.environmentId} is null) or (${t.level} = 'organization' and ${t.organizationId} is not null and ${t.environmentId} is null) or (${t.level} = 'environment' and ${t.organizationId} is not null and ${t.environmentId} is not null)`,
    ),
  ],
);
