// The audit log (modules/support).
import { sql } from "drizzle-orm";
import { index, jsonb, pgTable, text, uuid } from "drizzle-orm/pg-core";
import { id, ts } from "./columns.ts";
import { organizations } from "./organizations.ts";
import { users } from "./users.ts";

/** Who did what to which target, and why: every support command and sensitive change. */
export const auditLog = pgTable(
  "audit_log",
  {
    id: id(),
    organizationId: uuid("organization_id").notNull().references(() => organizations.id),
    actorUserId: uuid("actor_user_id").references(() => users.id),
    action: text("action").notNull(),
    targetType: text("target_type").notNull(),
    targetId: text("target_id").notNull(),
    reason: text("reason"),
    commandId: uuid("command_id"),
    deploymentId: uuid("deployment_id"),
    result: jsonb("result"),
    createdAt: ts("created_at").notNull().defaultNow(),
  },
  (t) => [
    index("audit_log_org_idx").on(t.organizationId, t.createdAt, t.id),
    // A command's entry; retention keeps the commands entries name.
    index("audit_log_command_idx").on(t.commandId).where(sql`${t.commandId} is not null`),
  ],
);
