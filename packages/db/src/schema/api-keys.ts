// Keys of the public API (modules/api-keys).
import { index, pgTable, text, uniqueIndex, uuid } from "drizzle-orm/pg-core";
import { id, ts } from "./columns.ts";
import { organizations } from "./organizations.ts";
import { projects } from "./projects.ts";
import { users } from "./users.ts";

export const apiKeys = pgTable(
  "api_keys",
  {
    id: id(),
    organizationId: uuid("organization_id").notNull().references(() => organizations.id),
    projectId: uuid("project_id").references(() => projects.id),
    /** read_only | full_access */
    access: text("access").notNull(),
    name: text("name").notNull(),
    /** The first characters of the key, safe to show (e.g. svc_live_rw_3fA9). */
    displayPrefix: text("display_prefix").notNull(),
    /** SHA-256 of the whole key; the key itself is never stored. */
    keyHash: text("key_hash").notNull(),
    createdBy: uuid("created_by").references(() => users.id),
    createdAt: ts("created_at").notNull().defaultNow(),
    lastUsedAt: ts("last_used_at"),
    revokedAt: ts("revoked_at"),
  },
  (t) => [
    uniqueIndex("api_keys_hash_key").on(t.keyHash),
    index("api_keys_org_idx").on(t.organizationId, t.createdAt, t.id),
  ],
);
