// Settings of the whole installation.
import { jsonb, pgTable, text } from "drizzle-orm/pg-core";
import { ts } from "./columns.ts";

/** Instance-wide secrets and settings shared by every replica (e.g. the cursor signing key). */
export const instanceSettings = pgTable("instance_settings", {
  key: text("key").primaryKey(),
  value: jsonb("value").notNull(),
  createdAt: ts("created_at").notNull().defaultNow(),
});
